"""Inline SVG bar charts for the HTML page: horizontal bars, a legend, CI whiskers; no scripts, no fonts.

    from levelfield.tools.leaderboard.svg import Bar, bar_chart, colours_for
    svg = bar_chart("Time to target", [Bar("jax", 41.2, 39.0, 43.5, "jax", "acme/box")], unit="s")

Every bar is labelled with its framework, whole, at the start of its label: rows
from one system differ only there, and a cut system name used to take it away
("levelfield/levelfield CI machine (2 v…"). After the framework come the
qualifiers that differ between the chart's bars (processes, precision:
render_html.py picks them); a second, grey line names the system where the
chart holds several. A label too long for its column loses qualifiers or the
middle of the system name, never the framework; a framework name longer than
the column is squeezed (textLength), not cut. Each bar's <title> (tooltip,
screen reader) holds the full label, the system and the exact value and CI.
All text is escaped: labels come from submissions. Colours follow the framework
(colours_for), and a legend above the bars names them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape

from levelfield.tools.leaderboard.columns import number

# Framework colours, distinguishable in print and for common colour-vision deficiencies (Okabe-Ito).
COLOURS = {"pytorch": "#d55e00", "tensorflow": "#e69f00", "jax": "#0072b2"}
# Frameworks beyond those (plugins, ONNX Runtime ...): the rest of the palette in name order, then grey.
MORE_COLOURS = ("#009e73", "#cc79a7", "#56b4e9", "#8a6d00")
OTHER_COLOUR = "#777777"
WIDTH_PX, LABEL_PX, VALUE_PX = 900, 280, 130
BAR_PX, GAP_PX, LEGEND_PX, AXIS_PX = 22, 14, 30, 28
FONT_PX, SMALL_PX = 12, 11
# Average advance of a character of the page's sans-serif at FONT_PX (digits and lower case): sizes labels
# without a font at hand; a label that would overflow is fitted by textLength in any case.
CHAR_PX = 6.6
LABEL_CHARS = int((LABEL_PX - 10) / CHAR_PX)  # 40: what one label line holds
SEPARATOR = " · "


@dataclass
class Bar:
    label: str  # the framework, then what tells the bar from the chart's other bars: "jax · 2 x 1 node"
    value: float | None
    low: float | None = None  # CI whisker, same unit as value
    high: float | None = None
    framework: str | None = None  # kept whole at the start of the label; picks the colour
    system: str = ""  # the second line, where the chart holds several systems ("acme/box")


def colours_for(frameworks: Iterable[str | None]) -> dict[str, str]:
    """One colour per framework: COLOURS, then MORE_COLOURS in name order, then grey."""
    others = sorted({f for f in frameworks if f and f not in COLOURS})
    extra = dict(zip(others, MORE_COLOURS, strict=False))
    return {**COLOURS, **extra}


def colour(framework: str | None, colours: dict[str, str]) -> str:
    return colours.get(framework or "", OTHER_COLOUR)


def nice_ticks(top: float, target: int = 5) -> list[float]:
    """Round tick values 0, step, 2 step, ... covering `top` (steps of 1, 2, 2.5 or 5 x 10^k)."""
    if not top > 0 or not math.isfinite(top):
        return [0.0, 1.0]
    raw = top / target
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    count = math.ceil(top / step - 1e-9)
    return [i * step for i in range(count + 1)]


def tick_text(value: float) -> str:
    """Ticks are round numbers: print them without padding zeros (50, 2.5, 20,000)."""
    return f"{value:,.0f}" if value >= 10_000 else f"{value:g}"


def fit_label(label: str, framework: str | None, chars: int = LABEL_CHARS) -> str:
    """`label` in at most `chars` characters, its leading framework whole: the qualifiers after it are cut
    at the end ("jax · 2 x 1 node · b…"). A framework longer than `chars` is returned whole (text_element
    squeezes it)."""
    if len(label) <= chars:
        return label
    head = framework if framework and label.startswith(framework) else ""
    if len(head) >= chars - 1:
        return head
    return label[: chars - 1].rstrip(" ·") + "…"


def fit_middle(text: str, chars: int = LABEL_CHARS) -> str:
    """`text` in at most `chars` characters, cut in the middle: both ends of "org/system name (details)" tell
    systems apart."""
    if len(text) <= chars:
        return text
    keep = chars - 1
    return text[: keep - keep // 2].rstrip() + "…" + text[len(text) - keep // 2 :].lstrip()


def text_element(x: float, y: float, text: str, *, room_px: float, size_px: int = FONT_PX, **attrs: str) -> str:
    """An SVG <text>; squeezed by textLength when its estimated width exceeds `room_px`, so nothing is lost
    off the edge."""
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    if len(text) * CHAR_PX * size_px / FONT_PX > room_px:
        extra += f' textLength="{room_px:.0f}" lengthAdjust="spacingAndGlyphs"'
    size = "" if size_px == FONT_PX else f' font-size="{size_px}"'
    return f'<text x="{x}" y="{y}"{size}{extra}>{escape(text)}</text>'


def legend(frameworks: list[str], colours: dict[str, str], y: float, left_px: float = 0) -> list[str]:
    """Swatches and names in a row: one per framework the chart shows, in the order of first appearance."""
    out = ['<g class="legend">']
    x = left_px
    for framework in frameworks:
        out.append(
            f'<g class="legend-entry" data-framework="{escape(framework)}">'
            f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{colour(framework, colours)}"/>'
            + text_element(x + 16, y, framework, room_px=LABEL_PX)
            + "</g>"
        )
        x += 16 + min(len(framework) * CHAR_PX, LABEL_PX) + 18
    out.append("</g>")
    return out


def _unique(items) -> list:
    return list(dict.fromkeys(i for i in items if i))


def bar_chart(title: str, bars: list[Bar], *, unit: str, colours: dict[str, str] | None = None) -> str:
    """The chart as an <svg>; `title` (with the unit) is its accessible name, the page's caption shows it."""
    colours = colours or colours_for(b.framework for b in bars)
    tops = [v for b in bars for v in (b.value, b.high) if v is not None and math.isfinite(v)]
    ticks = nice_ticks(max(tops, default=0.0))
    axis_max = ticks[-1]
    plot_px = WIDTH_PX - LABEL_PX - VALUE_PX
    pitch = BAR_PX + GAP_PX
    height_px = LEGEND_PX + len(bars) * pitch + AXIS_PX

    def x(value: float) -> float:
        return round(LABEL_PX + plot_px * value / axis_max, 1)

    out = [
        (
            f'<svg class="chart" role="img" viewBox="0 0 {WIDTH_PX} {height_px}" width="{WIDTH_PX}" '
            f'height="{height_px}" font-family="system-ui, sans-serif" font-size="{FONT_PX}">'
        ),
        f"<title>{escape(f'{title} ({unit})')}</title>",
        *legend(_unique(b.framework for b in bars), colours, 16, LABEL_PX),
    ]
    top = LEGEND_PX
    bottom = top + len(bars) * pitch
    for tick in ticks:
        out.append(
            f'<line x1="{x(tick)}" y1="{top - 4}" x2="{x(tick)}" y2="{bottom}" stroke="#ddd"/>'
            f'<text x="{x(tick)}" y="{bottom + 16}" text-anchor="middle" fill="#555">{tick_text(tick)}</text>'
        )
    for i, bar in enumerate(bars):
        y = top + i * pitch + GAP_PX / 2
        mid = y + BAR_PX / 2
        value_text = f"{number(bar.value)} {unit}" if bar.value is not None else "no value"
        tip = bar.label + (f", {bar.system}" if bar.system else "") + f": {value_text}"
        if bar.low is not None and bar.high is not None:
            tip += f", 95% CI [{number(bar.low)}, {number(bar.high)}]"
        room = LABEL_PX - 10
        out.append(f'<g class="bar" data-framework="{escape(bar.framework or "")}"><title>{escape(tip)}</title>')
        line_y = mid - 1 if bar.system else mid + 4
        out.append(
            text_element(
                LABEL_PX - 6,
                line_y,
                fit_label(bar.label, bar.framework),
                room_px=room,
                text_anchor="end",
                font_weight="bold",
                **{"class": "label"},
            )
        )
        if bar.system:
            out.append(
                text_element(
                    LABEL_PX - 6,
                    mid + 12,
                    fit_middle(bar.system, int(room / (CHAR_PX * SMALL_PX / FONT_PX))),
                    room_px=room,
                    size_px=SMALL_PX,
                    text_anchor="end",
                    fill="#555",
                    **{"class": "system"},
                )
            )
        end = LABEL_PX
        if bar.value is not None:
            end = x(bar.value)
            out.append(
                f'<rect x="{LABEL_PX}" y="{y}" width="{round(end - LABEL_PX, 1)}" height="{BAR_PX}" '
                f'fill="{colour(bar.framework, colours)}"/>'
            )
        if bar.low is not None and bar.high is not None:
            lo, hi = x(max(bar.low, 0.0)), x(bar.high)
            end = max(end, hi)
            out.append(
                f'<path d="M{lo} {mid}H{hi}M{lo} {y + 4}V{y + BAR_PX - 4}M{hi} {y + 4}V{y + BAR_PX - 4}" '
                f'stroke="#222" stroke-width="1.5" fill="none"/>'
            )
        out.append(text_element(end + 6, mid + 4, value_text, room_px=WIDTH_PX - end - 8) + "</g>")
    out.append(f'<line x1="{LABEL_PX}" y1="{bottom}" x2="{LABEL_PX + plot_px}" y2="{bottom}" stroke="#555"/>')
    out.append("</svg>")
    return "\n".join(out)
