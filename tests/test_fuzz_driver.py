"""The fuzz tool's command end to end, as `make fuzz` runs it, on a few inputs (the CI share is in
test_fuzz_checker.py; this module runs apart from it because parse reuse cannot be nested)."""

from __future__ import annotations

import json

import pytest

from levelfield.tools.fuzz.__main__ import main
from levelfield.tools.fuzz.reuse import ReusedParses
from tests.test_checker_fixtures import EXAMPLE


def test_the_command_writes_figures_that_add_up(tmp_path, capsys):
    out = tmp_path / "build" / "report.json"
    code = main(
        [
            "--inputs",
            "4",
            "--seed",
            "7",
            "--full-every",
            "0",
            "--cli-every",
            "0",
            "--example",
            str(EXAMPLE),
            "--work-dir",
            str(tmp_path),
            "--out",
            str(out),
        ]
    )
    report = json.loads(out.read_text())
    assert code == 0 and report["passed"], report["examples"]
    assert (report["inputs"], report["crashes"], report["misses"], report["leaks"]) == (4, 0, 0, 0)
    assert report["full_share"] == {"inputs": 0, "problems": 0} and report["harness_problems"] == []
    assert sum(row["inputs"] for row in report["by_class"].values()) == 4 and report["codes_seen"]
    assert "4 inputs" in capsys.readouterr().err


def test_replay_checks_one_input_as_shipped(tmp_path, capsys):
    assert main(["--seed", "7", "--replay", "2", "--example", str(EXAMPLE), "--work-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("input 2: ") and " checks, rules " in printed.splitlines()[-1]


def test_parse_reuse_cannot_be_nested():
    with ReusedParses(), pytest.raises(RuntimeError, match="already active"):
        ReusedParses().__enter__()
