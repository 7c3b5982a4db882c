"""A grouped bar chart as a standalone SVG, with optional whiskers (no plotting library
in the environment, and none needed for bars)."""

from __future__ import annotations

from collections.abc import Mapping
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
