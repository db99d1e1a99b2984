"""The HTML page's charts (tools/leaderboard/svg.py, scatter.py, charts.py): labels a reader can tell apart.

    .venv/bin/python -m pytest tests/test_leaderboard_svg.py -q

The browser test (test_leaderboard_html.py) measures the rendered page; these pin the text the SVG holds.
"""

from __future__ import annotations

import re

import pytest

from levelfield.tools.leaderboard.charts import labels
from levelfield.tools.leaderboard.scatter import Point, scatter_chart
from levelfield.tools.leaderboard.svg import (
    COLOURS,
    LABEL_CHARS,
    MORE_COLOURS,
    OTHER_COLOUR,
    Bar,
    bar_chart,
    colours_for,
    fit_label,
    fit_middle,
)

EXAMPLE_SYSTEM = "levelfield/levelfield CI machine (2 vCPU, 24 GiB)"  # the example's rows, as they were labelled


def _texts(svg: str, kind: str) -> list[str]:
    return re.findall(rf'<text [^>]*class="{kind}"[^>]*>([^<]*)</text>', svg)


def test_every_bar_starts_with_its_whole_framework_and_the_legend_names_them():
    bars = [Bar(fw, 40.0 + i, framework=fw, system=EXAMPLE_SYSTEM) for i, fw in enumerate(COLOURS)]
    svg = bar_chart("Time to target", bars, unit="s")
    assert _texts(svg, "label") == list(COLOURS)
    systems = _texts(svg, "system")  # cut in the middle where it is too long for the label column
    assert len(set(systems)) == 1 and systems[0] in (EXAMPLE_SYSTEM, fit_middle(EXAMPLE_SYSTEM, len(systems[0])))
    assert systems[0].startswith("levelfield/levelfield") and systems[0].endswith("24 GiB)")
    assert re.findall(r'<g class="legend-entry" data-framework="([^"]+)">', svg) == list(COLOURS)
    assert re.findall(r'<g class="bar" data-framework="([^"]+)">', svg) == list(COLOURS)


def test_a_long_label_loses_its_qualifiers_never_its_framework():
    label = "tensorflow · 4 x 2 nodes · bf16 · with a very long qualifier indeed"
    shown = fit_label(label, "tensorflow")
    assert shown.startswith("tensorflow · 4 x 2 nodes") and shown.endswith("…") and len(shown) <= LABEL_CHARS
    long_framework = "a-plugin-framework-with-an-unusually-long-name-x"
    assert fit_label(f"{long_framework} · fp32", long_framework) == long_framework
    svg = bar_chart("t", [Bar(long_framework, 1.0, framework=long_framework)], unit="s")
    assert f'lengthAdjust="spacingAndGlyphs">{long_framework}</text>' in svg  # squeezed to fit, not cut


def test_a_long_system_name_is_cut_in_its_middle_and_whole_in_the_tooltip():
    system = "acme/" + "very long system name " * 4 + "(8 x H200)"
    shown = fit_middle(system, 40)
    assert len(shown) == 40 and shown.startswith("acme/very") and shown.endswith("(8 x H200)")
    svg = bar_chart("t", [Bar("jax", 41.2, 39.0, 43.5, "jax", system)], unit="s")
    assert f"<title>jax, {system}: 41.20 s, 95% CI [39.00, 43.50]</title>" in svg


def test_other_frameworks_get_the_rest_of_the_palette_in_name_order():
    colours = colours_for(["jax", "zeta", "onnxruntime"] + [f"f{i}" for i in range(len(MORE_COLOURS))])
    assert colours["jax"] == COLOURS["jax"]
    assert colours["f0"] == MORE_COLOURS[0] and "zeta" not in colours  # past the palette: grey
    svg = bar_chart("t", [Bar("zeta", 1.0, framework="zeta")], unit="s", colours=colours)
    assert f'fill="{OTHER_COLOUR}"' in svg


def _row(framework: str, system: str = "box", processes: int | None = 1, precision: str | None = "fp32") -> dict:
    row = {"framework": framework, "org": "acme", "system_name": system, "precision": precision}
    if processes is not None:
        row.update(processes=processes, process_nodes=1)
    return row


@pytest.mark.parametrize(
    ("rows", "expected", "one_system"),
    [
        ([_row("jax"), _row("pytorch")], [("jax", ""), ("pytorch", "")], "acme/box"),
        (
            [_row("jax", processes=2), _row("jax", "big")],
            [("jax · 2 x 1 node", "acme/box"), ("jax · 1 x 1 node", "acme/big")],
            "",
        ),
        ([_row("jax", precision="bf16"), _row("pytorch")], [("jax · bf16", ""), ("pytorch · fp32", "")], "acme/box"),
        ([_row("jax", processes=None), _row("pytorch", processes=None)], [("jax", ""), ("pytorch", "")], "acme/box"),
    ],
    ids=["same-everything", "processes-and-systems-differ", "precision-differs", "inference-rows"],
)
def test_labels_name_only_what_differs_within_the_chart(rows, expected, one_system):
    assert labels(rows) == (expected, one_system)


def test_scatter_labels_every_point_and_keeps_the_figures_in_its_tooltip():
    points = [Point("jax", 5200.0, 41.0, "jax"), Point("pytorch", 5100.0, 41.5, "pytorch", "acme/box")]
    svg = scatter_chart("Energy vs throughput", points, x_unit="samples/s", y_unit="J per 1,000 samples")
    assert _texts(svg, "label") == ["jax", "pytorch (acme/box)"]
    assert "<title>pytorch, acme/box: 5100 samples/s, 41.50 J per 1,000 samples</title>" in svg
    assert svg.count("<circle") == 2
