"""Inline SVG bar charts for the HTML page: horizontal bars, optional CI whiskers, no scripts, no fonts.

    from levelfield.tools.leaderboard.svg import Bar, bar_chart
    svg = bar_chart("time to target", [Bar("acme/box jax", 41.2, 39.0, 43.5, "pytorch")], unit="s")

Horizontal bars because labels (org/system/framework) are long. Every bar has
a <title> (a tooltip, and what a screen reader reads) with the exact value and
interval. All text is escaped: labels come from submissions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from levelfield.tools.leaderboard.columns import number

# Framework colours, chosen to be distinguishable in print and for common colour-vision deficiencies.
COLOURS = {"pytorch": "#d55e00", "tensorflow": "#e69f00", "jax": "#0072b2"}
OTHER_COLOUR = "#777777"
WIDTH_PX, LABEL_PX, VALUE_PX = 760, 250, 110
BAR_PX, GAP_PX, TOP_PX, AXIS_PX = 20, 10, 30, 28
LABEL_CHARS = 38


@dataclass
class Bar:
    label: str
    value: float | None
    low: float | None = None  # CI whisker, same unit as value
    high: float | None = None
    framework: str | None = None  # picks the colour


def nice_ticks(top: float, target: int = 5) -> list[float]:
    """Round tick values 0, step, 2 step, ... covering `top` (steps of 1, 2, 2.5 or 5 x 10^k)."""
    if not top > 0:
        return [0.0, 1.0]
    raw = top / target
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    count = math.ceil(top / step - 1e-9)
    return [i * step for i in range(count + 1)]


def tick_text(value: float) -> str:
    """Ticks are round numbers: print them without padding zeros (50, 2.5, 20,000)."""
    return f"{value:,.0f}" if value >= 10_000 else f"{value:g}"


def short_label(label: str) -> str:
    """`label` in at most LABEL_CHARS characters, its last word kept whole: a bar's label ends with what
    tells it from its neighbours (the framework, in "org/system framework"), and the system names before it
    are long and alike, so the cut comes out of them."""
    if len(label) <= LABEL_CHARS:
        return label
    head, sep, last = label.rpartition(" ")
    if not sep or len(last) > LABEL_CHARS // 2:
        return label[: LABEL_CHARS - 1] + "…"
    return head[: LABEL_CHARS - len(last) - 2].rstrip() + "… " + last


def bar_chart(title: str, bars: list[Bar], *, unit: str, note: str = "") -> str:
    tops = [v for b in bars for v in (b.value, b.high) if v is not None and math.isfinite(v)]
    ticks = nice_ticks(max(tops, default=0.0))
    axis_max = ticks[-1]
    plot_px = WIDTH_PX - LABEL_PX - VALUE_PX
    height_px = TOP_PX + len(bars) * (BAR_PX + GAP_PX) + AXIS_PX

    def x(value: float) -> float:
        return round(LABEL_PX + plot_px * value / axis_max, 1)

    heading = escape(f"{title} ({unit})" + (f", {note}" if note else ""))
    out = [
        (
            f'<svg class="chart" role="img" viewBox="0 0 {WIDTH_PX} {height_px}" width="{WIDTH_PX}" '
            f'height="{height_px}" font-family="system-ui, sans-serif" font-size="12">'
        ),
        f"<title>{heading}</title>",
        f'<text x="0" y="16" font-weight="bold">{heading}</text>',
    ]
    bottom = height_px - AXIS_PX
    for tick in ticks:
        out.append(
            f'<line x1="{x(tick)}" y1="{TOP_PX - 4}" x2="{x(tick)}" y2="{bottom}" stroke="#ddd"/>'
            f'<text x="{x(tick)}" y="{bottom + 16}" text-anchor="middle" fill="#555">{tick_text(tick)}</text>'
        )
    for i, bar in enumerate(bars):
        y = TOP_PX + i * (BAR_PX + GAP_PX)
        mid = y + BAR_PX / 2
        value_text = f"{number(bar.value)} {unit}" if bar.value is not None else "no value"
        tip = f"{bar.label}: {value_text}"
        if bar.low is not None and bar.high is not None:
            tip += f", 95% CI [{number(bar.low)}, {number(bar.high)}]"
        colour = COLOURS.get(bar.framework or "", OTHER_COLOUR)
        out.append(f"<g><title>{escape(tip)}</title>")
        out.append(f'<text x="{LABEL_PX - 6}" y="{mid + 4}" text-anchor="end">{escape(short_label(bar.label))}</text>')
        end = LABEL_PX
        if bar.value is not None:
            end = x(bar.value)
            out.append(
                f'<rect x="{LABEL_PX}" y="{y}" width="{round(end - LABEL_PX, 1)}" height="{BAR_PX}" fill="{colour}"/>'
            )
        if bar.low is not None and bar.high is not None:
            lo, hi = x(max(bar.low, 0.0)), x(bar.high)
            end = max(end, hi)
            out.append(
                f'<path d="M{lo} {mid}H{hi}M{lo} {y + 4}V{y + BAR_PX - 4}M{hi} {y + 4}V{y + BAR_PX - 4}" '
                f'stroke="#222" stroke-width="1.5" fill="none"/>'
            )
        out.append(f'<text x="{end + 6}" y="{mid + 4}">{escape(value_text)}</text></g>')
    out.append(f'<line x1="{LABEL_PX}" y1="{bottom}" x2="{LABEL_PX + plot_px}" y2="{bottom}" stroke="#555"/>')
    out.append("</svg>")
    return "\n".join(out)
