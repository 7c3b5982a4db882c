"""A grouped bar chart as a standalone SVG (no plotting library in the environment)."""

from __future__ import annotations

from html import escape

COLOURS = ("#4063d8", "#9558b2", "#389826", "#cb3c33")


def bars_svg(groups: dict[str, dict[str, float]], title: str, ylabel: str = "") -> str:
    """``groups``: group label -> {series label: value in [0, 1]}."""
    series = list(dict.fromkeys(s for values in groups.values() for s in values))
    width = max(120 + 150 * len(groups), 80 + 160 * len(series))
    height, left, top, bottom = 320, 50, 40, 60
    plot_h = height - top - bottom
    bar = 110 / max(1, len(series))
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
        out.append(f'<text x="12" y="{top + plot_h / 2}" transform="rotate(-90 12 '
                   f'{top + plot_h / 2})" text-anchor="middle">{escape(ylabel)}</text>')  # fmt: skip
    for g, (group, values) in enumerate(groups.items()):
        x0 = left + 20 + 150 * g
        for i, name in enumerate(series):
            value = values.get(name)
            if value is None:
                continue
            h = plot_h * value
            x, y = x0 + i * bar, top + plot_h - h
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 4:.1f}" height="{h:.1f}" '
                       f'fill="{COLOURS[i % len(COLOURS)]}"/>')  # fmt: skip
            out.append(f'<text x="{x + (bar - 4) / 2:.1f}" y="{y - 3:.1f}" font-size="10" '
                       f'text-anchor="middle">{value:.2f}</text>')  # fmt: skip
        out.append(f'<text x="{x0 + 55}" y="{height - bottom + 18}" '
                   f'text-anchor="middle">{escape(group)}</text>')  # fmt: skip
    for i, name in enumerate(series):
        x = left + 20 + 160 * i
        out.append(f'<rect x="{x}" y="{height - 22}" width="10" height="10" '
                   f'fill="{COLOURS[i % len(COLOURS)]}"/>')  # fmt: skip
        out.append(f'<text x="{x + 14}" y="{height - 13}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)
