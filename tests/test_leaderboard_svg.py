"""The HTML page's bar charts (tools/leaderboard/svg.py): labels a reader can tell apart."""

from __future__ import annotations

import pytest

from levelfield.tools.leaderboard.svg import LABEL_CHARS, Bar, bar_chart, short_label

EXAMPLE_LABEL = "levelfield/levelfield CI machine (2 vCPU, 24 GiB) {}"  # the example's rows, as the page labels them


@pytest.mark.parametrize("framework", ["pytorch", "tensorflow", "jax"])
def test_a_long_label_keeps_its_framework(framework):
    label = short_label(EXAMPLE_LABEL.format(framework))
    assert label.endswith(f"… {framework}") and len(label) <= LABEL_CHARS
    assert label.startswith("levelfield/levelfield CI")


def test_the_example_rows_stay_apart_once_shortened():
    labels = {short_label(EXAMPLE_LABEL.format(fw)) for fw in ("pytorch", "tensorflow", "jax")}
    assert len(labels) == 3


def test_a_short_label_is_kept_and_a_long_last_word_is_cut_at_the_end():
    assert short_label("acme/box jax") == "acme/box jax"
    long_word = "x" * (LABEL_CHARS + 5)
    assert short_label(long_word) == long_word[: LABEL_CHARS - 1] + "…"


def test_the_chart_prints_the_shortened_label_and_keeps_the_whole_one_in_its_tooltip():
    full = EXAMPLE_LABEL.format("tensorflow")
    svg = bar_chart("time to target", [Bar(full, 41.2, 39.0, 43.5, "tensorflow")], unit="s")
    assert f">{short_label(full)}</text>" in svg and f"<title>{full}: 41.20 s" in svg
