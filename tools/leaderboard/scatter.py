"""An inline SVG scatter chart for the HTML page: a cost (energy, price) per sample against throughput.

    from levelfield.tools.leaderboard.scatter import Point, scatter_chart
    svg = scatter_chart("Energy per 1,000 samples vs throughput", [Point("jax", 5200.0, 41.0, "jax")],
                        x_unit="samples/s", y_unit="J")

A practitioner trades speed against what it costs: each result is one point,
throughput across, cost per sample up, so the best results lie bottom right.
Each point is a framework-coloured dot labelled with its framework (and the
qualifiers and system that tell it from the chart's other points, as the bar
charts do); a label goes right of its dot, or left, above or below where it
would cover one placed before. Each point's <title> holds the exact figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from levelfield.tools.leaderboard.columns import number
from levelfield.tools.leaderboard.svg import (
    CHAR_PX,
    FONT_PX,
    colour,
    colours_for,
    fit_label,
    legend,
    nice_ticks,
    text_element,
    tick_text,
)

WIDTH_PX, HEIGHT_PX = 900, 420
LEFT_PX, RIGHT_PX, TOP_PX, BOTTOM_PX = 80, 40, 40, 50
DOT_PX = 5
LABEL_CHARS = 32


@dataclass
class Point:
    label: str  # the framework, then its qualifiers, as a bar's label
    x: float  # throughput
    y: float  # cost per sample
    framework: str | None = None
    system: str = ""  # shown after the label where the chart holds several systems


def _boxes_overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _place(px: float, py: float, width: float, placed: list[tuple]) -> tuple[float, float, str]:
    """Where a label of `width` px goes beside the dot at (px, py): the first of right, left, above, below
    that covers no label placed before and stays inside the plot (right when all do)."""
    options = [
        (px + DOT_PX + 4, py + 4, "start"),
        (px - DOT_PX - 4, py + 4, "end"),
        (px - width / 2, py - DOT_PX - 6, "start"),
        (px - width / 2, py + DOT_PX + 16, "start"),
    ]
    for x, y, anchor in options:
        left = x - width if anchor == "end" else x
        box = (left, y - FONT_PX, left + width, y + 2)
        inside = left >= LEFT_PX and left + width <= WIDTH_PX - 4
        if inside and not any(_boxes_overlap(box, other) for other in placed):
            placed.append(box)
            return x, y, anchor
    x, y, anchor = options[0] if px + width < WIDTH_PX - RIGHT_PX else options[1]
    return x, y, anchor


def scatter_chart(
    title: str, points: list[Point], *, x_unit: str, y_unit: str, colours: dict[str, str] | None = None
) -> str:
    colours = colours or colours_for(p.framework for p in points)
    finite = [p for p in points if math.isfinite(p.x) and math.isfinite(p.y)]
    x_ticks = nice_ticks(max((p.x for p in finite), default=0.0))
    y_ticks = nice_ticks(max((p.y for p in finite), default=0.0))
    plot_w, plot_h = WIDTH_PX - LEFT_PX - RIGHT_PX, HEIGHT_PX - TOP_PX - BOTTOM_PX

    def sx(value: float) -> float:
        return round(LEFT_PX + plot_w * value / x_ticks[-1], 1)

    def sy(value: float) -> float:
        return round(TOP_PX + plot_h - plot_h * value / y_ticks[-1], 1)

    out = [
        (
            f'<svg class="chart scatter" role="img" viewBox="0 0 {WIDTH_PX} {HEIGHT_PX}" width="{WIDTH_PX}" '
            f'height="{HEIGHT_PX}" font-family="system-ui, sans-serif" font-size="{FONT_PX}">'
        ),
        f"<title>{escape(title)}</title>",
        *legend(list(dict.fromkeys(p.framework for p in finite if p.framework)), colours, 16, LEFT_PX),
    ]
    bottom, right = TOP_PX + plot_h, LEFT_PX + plot_w
    for tick in x_ticks:
        out.append(
            f'<line x1="{sx(tick)}" y1="{TOP_PX}" x2="{sx(tick)}" y2="{bottom}" stroke="#eee"/>'
            f'<text x="{sx(tick)}" y="{bottom + 16}" text-anchor="middle" fill="#555">{tick_text(tick)}</text>'
        )
    for tick in y_ticks:
        out.append(
            f'<line x1="{LEFT_PX}" y1="{sy(tick)}" x2="{right}" y2="{sy(tick)}" stroke="#eee"/>'
            f'<text x="{LEFT_PX - 6}" y="{sy(tick) + 4}" text-anchor="end" fill="#555">{tick_text(tick)}</text>'
        )
    out += [
        f'<path d="M{LEFT_PX} {TOP_PX}V{bottom}H{right}" stroke="#555" fill="none"/>',
        f'<text x="{(LEFT_PX + right) / 2}" y="{HEIGHT_PX - 10}" text-anchor="middle">{escape(x_unit)}</text>',
        (
            f'<text x="14" y="{(TOP_PX + bottom) / 2}" text-anchor="middle" '
            f'transform="rotate(-90 14 {(TOP_PX + bottom) / 2})">{escape(y_unit)}</text>'
        ),
    ]
    placed: list[tuple] = []
    for point in finite:
        px, py = sx(point.x), sy(point.y)
        shown = fit_label(point.label + (f" ({point.system})" if point.system else ""), point.framework, LABEL_CHARS)
        width = min(len(shown), LABEL_CHARS) * CHAR_PX
        lx, ly, anchor = _place(px, py, width, placed)
        tip = f"{point.label}" + (f", {point.system}" if point.system else "")
        tip += f": {number(point.x)} {x_unit}, {number(point.y)} {y_unit}"
        out += [
            f'<g class="point" data-framework="{escape(point.framework or "")}"><title>{escape(tip)}</title>',
            f'<circle cx="{px}" cy="{py}" r="{DOT_PX}" fill="{colour(point.framework, colours)}" stroke="#222"/>',
            text_element(lx, ly, shown, room_px=LABEL_CHARS * CHAR_PX, text_anchor=anchor, **{"class": "label"}),
            "</g>",
        ]
    out.append("</svg>")
    return "\n".join(out)
