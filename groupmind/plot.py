"""Charts as standalone SVG: grouped bars with optional whiskers, and curves over a log
axis (no plotting library in the environment, and none needed for these)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from html import escape

COLOURS = ("#4063d8", "#9558b2", "#389826", "#cb3c33", "#c17d11", "#2a9d8f")


def bars_svg(
    groups: Mapping[str, Mapping[str, float]],
    title: str,
    ylabel: str = "",
    whiskers: Mapping[str, Mapping[str, tuple[float, float]]] | None = None,
) -> str:
    """``groups``: group label -> {series label: value in [0, 1]}; ``whiskers``: the same
    keys -> (low, high), drawn as an interval over the bar."""
    series = list(dict.fromkeys(s for values in groups.values() for s in values))
    group_w = max(150, 30 + 36 * len(series))
    width = max(120 + group_w * len(groups), 80 + 160 * len(series))
    height, left, top, bottom = 340, 50, 40, 80
    plot_h = height - top - bottom
    bar = (group_w - 40) / max(1, len(series))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y}" y2="{y}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{tick:.2f}</text>')
    if ylabel:
        mid = top + plot_h / 2
        out.append(
            f'<text x="12" y="{mid}" transform="rotate(-90 12 {mid})" '
            f'text-anchor="middle">{escape(ylabel)}</text>'
        )
    for g, (group, values) in enumerate(groups.items()):
        x0 = left + 20 + group_w * g
        for i, name in enumerate(series):
            value = values.get(name)
            if value is None or value != value:  # missing, or NaN
                continue
            h = plot_h * max(0.0, min(1.0, value))
            x, y = x0 + i * bar, top + plot_h - h
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 4:.1f}" height="{h:.1f}" '
                f'fill="{COLOURS[i % len(COLOURS)]}"/>'
            )
            low_high = (whiskers or {}).get(group, {}).get(name)
            mid = x + (bar - 4) / 2
            if low_high is not None:
                y1, y2 = (top + plot_h * (1 - max(0.0, min(1.0, v))) for v in low_high)
                out.append(
                    f'<line x1="{mid:.1f}" x2="{mid:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" '
                    'stroke="#222"/>'
                )
                for yy in (y1, y2):
                    out.append(
                        f'<line x1="{mid - 4:.1f}" x2="{mid + 4:.1f}" y1="{yy:.1f}" '
                        f'y2="{yy:.1f}" stroke="#222"/>'
                    )
            out.append(
                f'<text x="{mid:.1f}" y="{y - 3:.1f}" font-size="10" '
                f'text-anchor="middle">{value:.2f}</text>'
            )
        out.append(
            f'<text x="{x0 + (group_w - 40) / 2}" y="{height - bottom + 18}" '
            f'text-anchor="middle">{escape(group)}</text>'
        )
    for i, name in enumerate(series):
        x = left + 20 + 160 * i
        out.append(
            f'<rect x="{x}" y="{height - 22}" width="10" height="10" '
            f'fill="{COLOURS[i % len(COLOURS)]}"/>'
        )
        out.append(f'<text x="{x + 14}" y="{height - 13}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def lines_svg(
    series: Mapping[str, Sequence[tuple[float, float]]],
    title: str,
    ylabel: str = "",
    target: float | None = None,
) -> str:
    """Curves over a log x axis (sizes: 1k, 10k, ...), from 0 up; ``target``: a dashed
    line at that value."""
    width, height, left, right, top, bottom = 330, 260, 52, 24, 36, 58
    xs = sorted({x for points in series.values() for x, _ in points})
    ys = [y for points in series.values() for _, y in points if y == y]
    if not xs or not ys:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"/>'
    top_y = max([*ys, target or 0.0]) * 1.15 or 1.0
    lo, hi = math.log10(xs[0]), math.log10(xs[-1])
    span = (hi - lo) or 1.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def at(x: float, y: float) -> tuple[float, float]:
        px = left + plot_w * ((math.log10(x) - lo) / span if hi > lo else 0.5)
        return px, top + plot_h * (1 - y / top_y)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="13">{escape(title)}</text>',
    ]
    for i in range(5):
        value = top_y * i / 4
        _, y = at(xs[0], value)
        out.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        out.append(f'<text x="{left - 5}" y="{y + 4:.1f}" text-anchor="end">{_tick(value)}</text>')
    for x in xs:
        px, _ = at(x, 0)
        out.append(
            f'<text x="{px:.1f}" y="{top + plot_h + 15}" text-anchor="middle">{_size(x)}</text>'
        )
    if ylabel:
        mid = top + plot_h / 2
        out.append(
            f'<text x="11" y="{mid}" transform="rotate(-90 11 {mid})" '
            f'text-anchor="middle">{escape(ylabel)}</text>'
        )
    if target is not None:
        _, y = at(xs[0], target)
        out.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#cb3c33" stroke-dasharray="5,4"/>'
        )
    for i, (name, points) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        drawn = [at(x, y) for x, y in sorted(points) if y == y]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in drawn)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.extend(
            f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>' for px, py in drawn
        )
        out.append(
            f'<rect x="{left + 4}" y="{height - 30 + 13 * (i // 2) - 9}" width="9" height="9" '
            f'fill="{colour}" transform="translate({140 * (i % 2)} 0)"/>'
        )
        out.append(
            f'<text x="{left + 17 + 140 * (i % 2)}" y="{height - 30 + 13 * (i // 2)}">'
            f"{escape(name)}</text>"
        )
    out.append("</svg>")
    return "\n".join(out)


def side_by_side(charts: Sequence[str]) -> str:
    """Several SVG charts in one row, as one SVG."""
    sizes = [_dimensions(c) for c in charts]
    width, height = sum(w for w, _ in sizes), max((h for _, h in sizes), default=0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">']
    x = 0
    for chart, (w, _) in zip(charts, sizes, strict=True):
        out.append(f'<g transform="translate({x} 0)">{chart}</g>')
        x += w
    out.append("</svg>")
    return "\n".join(out)


def _dimensions(svg: str) -> tuple[int, int]:
    found = re.search(r'width="(\d+)" height="(\d+)"', svg)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def _tick(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def _size(n: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return f"{n:g}"
