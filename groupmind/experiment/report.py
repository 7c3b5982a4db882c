"""The experiment's report: per metric each arm's figure (with its bootstrap interval),
each arm against the baseline (the difference, its interval and the verdict), written as
JSON, a Markdown table and an SVG plot, and printed."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from groupmind.experiment.dataset import Dataset
from groupmind.experiment.runner import ArmResult, metric_table
from groupmind.experiment.spec import ExperimentSpec, flatten
from groupmind.experiment.stats import interval, paired
from groupmind.machine import machine
from groupmind.plot import bars_svg

VERDICT_STYLE = {
    "better": "green",
    "worse": "red",
    "no clear difference": "dim",
    "not compared": "dim",
}


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def build_report(
    spec: ExperimentSpec, dataset: Dataset, results: list[ArmResult]
) -> dict[str, Any]:
    base = results[0]
    stats = {"resamples": spec.bootstrap, "confidence": spec.confidence, "seed": spec.seed}
    rows = []
    for name, metric in metric_table(spec, results).items():
        values, comparisons = {}, {}
        for r in results:
            scores = r.scores.get(metric.key, {})
            value, low, high = interval(scores, metric.aggregate, **_boot(stats))
            values[r.arm.name] = {
                "value": _num(value),
                "low": _num(low),
                "high": _num(high),
                "n": len(scores),
            }
            if r is base:
                continue
            c = paired(
                base.scores.get(metric.key, {}),
                scores,
                metric.aggregate,
                metric.better,
                **_boot(stats),
            )
            comparisons[r.arm.name] = {
                "n": c.n,
                "baseline": _num(c.baseline),
                "arm": _num(c.arm),
                "diff": _num(c.diff),
                "low": _num(c.low),
                "high": _num(c.high),
                "verdict": c.verdict,
            }
        rows.append(
            {
                "metric": name,
                "key": metric.key,
                "aggregate": metric.aggregate,
                "better": metric.better,
                "unit": metric.unit,
                "values": values,
                "comparisons": comparisons,
            }
        )
    return {
        "name": spec.name,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "dataset": {
            "path": str(spec.dataset),
            "name": dataset.name,
            "examples": len(dataset.examples),
            "kinds": sorted(dataset.kinds()),
        },
        "mode": spec.mode,
        "baseline": base.arm.name,
        "statistics": {**stats, "method": "paired percentile bootstrap over examples"},
        "arms": [
            {
                "name": r.arm.name,
                "changes": r.arm.label(),
                "variants": r.variants,
                "settings": flatten(r.arm.settings),
                "experiment": r.experiment,
            }
            for r in results
        ],
        "metrics": rows,
    }


def _boot(stats: dict[str, Any]) -> dict[str, Any]:
    return {
        "resamples": stats["resamples"],
        "confidence": stats["confidence"],
        "seed": stats["seed"],
    }


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    return f"{value:.1f}" if unit in ("ms", "tokens") else f"{value:.3f}"


def _diff(c: dict[str, Any], unit: str) -> str:
    if c["diff"] is None:
        return "–"
    return (
        f"{c['diff']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"
        if unit not in ("ms", "tokens")
        else f"{c['diff']:+.1f} [{c['low']:+.1f}, {c['high']:+.1f}]"
    )


def table(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The comparison as a header and rows of cells (the markdown report, the console)."""
    arms = [a["name"] for a in report["arms"]]
    base, others = arms[0], arms[1:]
    head = ["metric", "n", f"{base} (baseline)", *others]
    head += [f"{o} − {base} [{report['statistics']['confidence']:.0%} CI]" for o in others]
    head += [f"verdict ({o})" for o in others]
    rows = []
    for row in report["metrics"]:
        unit = row["unit"]
        cells = [f"{row['metric']} ({row['better']} is better)", str(row["values"][base]["n"])]
        cells += [_fmt(row["values"][a]["value"], unit) for a in arms]
        cells += [_diff(row["comparisons"][o], unit) for o in others]
        cells += [row["comparisons"][o]["verdict"] for o in others]
        rows.append(cells)
    return head, rows


def markdown(report: dict[str, Any]) -> str:
    head, rows = table(report)
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    arms_lines = [
        f"- **{a['name']}**: {a['changes']} (LangSmith experiment `{a['experiment']}`)"
        for a in report["arms"]
    ]
    return "\n".join(
        [
            f"# {report['name']}",
            "",
            f"{report['dataset']['examples']} examples of `{report['dataset']['name']}` "
            f"({', '.join(report['dataset']['kinds'])}), mode {report['mode']}, "
            f"on {report['machine']}.",
            "",
            *arms_lines,
            "",
            *lines,
            "",
            f"Differences: {report['statistics']['method']}, {report['statistics']['resamples']} "
            "resamples; a verdict says better or worse only when the interval excludes zero.",
            "",
        ]
    )


def plot(report: dict[str, Any]) -> str:
    """Shares and rates (figures in [0, 1]) per arm, with each arm's interval."""
    groups: dict[str, dict[str, float]] = {}
    whiskers: dict[str, dict[str, tuple[float, float]]] = {}
    for row in report["metrics"]:
        if row["unit"]:
            continue
        for arm, v in row["values"].items():
            if v["value"] is not None:
                groups.setdefault(row["metric"], {})[arm] = v["value"]
                whiskers.setdefault(row["metric"], {})[arm] = (v["low"], v["high"])
    return bars_svg(
        groups,
        f"{report['name']}: each arm, {report['statistics']['confidence']:.0%} bootstrap interval",
        whiskers=whiskers,
    )


def write_report(report: dict[str, Any], results: list[ArmResult], out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "markdown": out / "report.md", "plot": out / "report.svg"}
    paths["json"].write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    paths["markdown"].write_text(markdown(report), encoding="utf-8")
    paths["plot"].write_text(plot(report), encoding="utf-8")
    for r in results:  # per example, for digging into a difference
        path = out / f"examples-{r.arm.name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for example in r.examples:
                fh.write(json.dumps(example, ensure_ascii=False, default=str) + "\n")
    return paths


def print_report(report: dict[str, Any], console: Console) -> None:
    arms = [a["name"] for a in report["arms"]]
    base, others = arms[0], arms[1:]
    for a in report["arms"]:
        console.print(f"[bold]{a['name']}[/bold]: {a['changes']}")
    table = Table(
        title=f"{report['name']} ({report['dataset']['examples']} examples, baseline {base})"
    )
    for col in ("metric", "n", base, *others):
        table.add_column(col, justify="right" if col != "metric" else "left")
    for o in others:
        table.add_column(f"{o} − {base} [CI]", justify="right")
        table.add_column("verdict")
    for row in report["metrics"]:
        unit = row["unit"]
        cells = [
            f"{row['metric']} ({'↑' if row['better'] == 'higher' else '↓'})",
            str(row["values"][base]["n"]),
        ]
        cells += [_fmt(row["values"][a]["value"], unit) for a in arms]
        for o in others:
            c = row["comparisons"][o]
            cells += [_diff(c, unit), f"[{VERDICT_STYLE[c['verdict']]}]{c['verdict']}[/]"]
        table.add_row(*cells)
    console.print(table)
    console.print(f"on {report['machine']}")
