"""Counts written in docs/architecture.md are the code's: a test, not a typed number (issue 39 item 5).

.venv/bin/python -m pytest tests/test_docs_counts.py -q
"""

from __future__ import annotations

import re
from pathlib import Path

import levelfield.checker.checks  # registers every levelfield check
import levelfield.checker.mlcommons  # noqa: F401 - and the MLCommons trees' checks
from levelfield.checker.findings import REGISTRY
from levelfield.ground.registry import registered
from levelfield.rules import load_suite
from levelfield.rules.loader import available_versions, rules_root

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
# "three" stays legal: a task's three implementations, one per framework, is not a count that moves.
NUMBER_WORDS = ("four", "five", "six", "seven", "eight", "nine", "twelve", "eighteen")


def _counts(pattern: str) -> list[tuple[str, ...]]:
    found = re.findall(pattern, ARCHITECTURE.read_text())
    assert found, f"docs/architecture.md no longer says {pattern!r}: keep one such statement, or drop this test"
    return found


def test_the_number_of_checks_is_the_registrys():
    assert {int(n) for n in _counts(r"(\d+) registered checks")} == {len(REGISTRY)}


def test_the_implementations_are_counted_from_the_rules_and_the_registry():
    """Counted under the newest rules version (1.2, provisional, names onnxruntime for inference): every
    implementation levelfield ships, the training frameworks' and the inference-only ones."""
    suite = load_suite(available_versions(rules_root())[-1])
    assert {(int(a), int(b)) for a, b in _counts(r"(\d+) tasks x (\d+) frameworks")} == {
        (len(suite.tasks), len(suite.frameworks))
    }
    entries = registered(suite)
    assert {int(n) for n in _counts(r"(\d+) implementations")} == {len(entries)}
    inference_only = [e for e in entries if e.roles == ("inference",)]
    assert {int(n) for n in _counts(r"(\d+) inference-only implementations")} == {len(inference_only)}


def test_no_count_is_spelled_as_a_word_beside_implementations_or_checks():
    text = ARCHITECTURE.read_text().lower()
    nouns = ("implementations", "checks", "tasks")
    stale = [f"{w} {noun}" for w in NUMBER_WORDS for noun in nouns if re.search(rf"\b{w} {noun}\b", text)]
    stale += [f"all {w}" for w in NUMBER_WORDS if re.search(rf"\ball {w}\b", text)]
    assert stale == [], f"docs/architecture.md spells counts as words (write digits, tested here): {stale}"
