"""ctr-dlrm-standard at full size through the LoadGen runner: a smoke run is VALID.

The full model (1.07 GiB of tables) in one framework, PyTorch eager (no compile: the equivalence
test compiles all three at reduced tables). About a minute on a 2-core CPU, most of it drawing the
286 M initial weights and warming up; it is the one test that runs the standard task as shipped.
"""

from __future__ import annotations

import json

from conftest import run_cli

TASK = "ctr-dlrm-standard"


def test_a_loadgen_smoke_run_of_the_full_size_model_is_valid(tmp_path):
    out = tmp_path / "offline"
    result = run_cli(
        "infer", "--task", TASK, "--rules-version", "1.1", "--framework", "pytorch", "--eager",
        "--scenario", "offline", "--mode", "performance", "--profile", "smoke", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads((out / "result.json").read_text())
    assert (record["task"], record["rules_version"], record["profile"]) == (TASK, "1.1", "smoke")
    assert [run["result_validity"] for run in record["runs"]] == ["VALID"]
    assert record["samples_per_s"] > 0
