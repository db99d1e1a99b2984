"""The calibration tool: resumable run records, and the target and reference points proposed from them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from levelfield.harness.calibrate import planned_runs, propose, read_records, write_records


def record(framework, batch, seed, evals, stop_value=0.9):
    return {"framework": framework, "global_batch_size": batch, "seed": seed, "evals": evals, "stop_value": stop_value}


def test_the_target_is_what_95_percent_reach_rounded_down_and_lowered_by_the_margin():
    runs = [record("pytorch", 256, s, [[1.0, 0.80], [2.0, 0.86], [3.0, 0.884]]) for s in range(19)]
    runs.append(record("jax", 256, 99, [[1.0, 0.5], [2.0, 0.6], [3.0, 0.7]]))  # the one run in 20 allowed to miss
    proposal = propose(runs, step=0.005)
    assert proposal["target"] == 0.875  # 0.884 -> 0.88 on the grid, minus one step
    assert proposal["runs"] == 20 and proposal["runs_reaching_target"] == 19
    assert proposal["points"] == [
        {"global_batch_size": 256, "epochs_to_target": {"jax": [None], "pytorch": [3.0] * 19}}
    ]


def test_two_misses_in_twenty_lower_the_target_to_what_the_third_worst_reaches():
    runs = [record("tf", 512, s, [[0.5, 0.7], [1.0, 0.9]]) for s in range(18)]
    runs += [record("tf", 512, 100 + s, [[0.5, 0.6], [1.0, 0.75]]) for s in range(2)]
    assert propose(runs, step=0.01, margin=0.0)["target"] == 0.75


def test_the_target_never_exceeds_the_stop_value_and_points_are_fractional_epochs():
    runs = [
        record("jax", b, s, [[0.25, 0.5], [0.5, 0.8], [0.75, 0.95]], stop_value=0.8) for b in (256, 512) for s in (1, 2)
    ]
    proposal = propose(runs, step=0.05, margin=0.0)
    assert proposal["target"] == 0.8
    assert [p["global_batch_size"] for p in proposal["points"]] == [256, 512]
    assert proposal["points"][0]["epochs_to_target"] == {"jax": [0.5, 0.5]}


def test_planned_runs_are_seed_major_with_distinct_seeds_per_framework():
    plan = planned_runs(["pytorch", "jax"], [256, 512], 2, 1000, ["pytorch", "tensorflow", "jax"])
    assert plan[:4] == [("pytorch", 256, 1000), ("jax", 256, 3000), ("pytorch", 512, 1000), ("jax", 512, 3000)]
    assert len(plan) == len(set(plan)) == 8
    assert len({seed for fw, _, seed in plan if fw == "pytorch"} & {seed for fw, _, seed in plan if fw == "jax"}) == 0


def test_records_round_trip_in_a_stable_order(tmp_path):
    path = tmp_path / "calibration" / "t.jsonl"
    assert read_records(path) == []
    runs = [record("jax", 512, 2, [[1.0, 0.9]]), record("jax", 256, 1, [[1.0, 0.8]])]
    write_records(path, runs)
    assert [r["global_batch_size"] for r in read_records(path)] == [256, 512]


def test_nothing_to_propose_from_is_an_error():
    with pytest.raises(ValueError, match="no calibration runs"):
        propose([], step=0.005)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--task", "nope"], "unknown task 'nope'"),
        (["--task", "ctr-dlrm", "--profile", "nope"], "unknown profile 'nope'"),
    ],
)
def test_a_user_mistake_is_one_line_not_a_traceback(args, message):
    done = subprocess.run(
        [sys.executable, "-m", "levelfield", "calibrate", *args, "--propose-only"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_proposing_from_no_runs_is_one_line_naming_the_file(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "levelfield",
            "calibrate",
            "--task",
            "ctr-dlrm",
            "--propose-only",
            "--calibration-file",
            str(tmp_path / "none.jsonl"),
            "--batch-sizes",
            "1024",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'none.jsonl'}: no submission-profile calibration runs at global batch size 1024" in done.stderr


def _calibrate(tmp_path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "levelfield", "calibrate", "--task", "ctr-dlrm"]
    command += ["--calibration-file", str(tmp_path / "cal.jsonl"), "--runs-dir", str(tmp_path / "runs"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def test_a_calibration_runs_records_and_resumes_where_it_stopped(tmp_path):
    """The tool end to end, as on an accelerator (the trainer picks the device), at the smoke profile's size:
    two runs recorded with their profile and curve, then a rerun finds nothing left to run."""
    smoke = ("--frameworks", "jax", "--seeds", "2", "--batch-sizes", "1024", "--profile", "smoke")
    first = _calibrate(tmp_path, *smoke)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "0 runs on file, 2 to run" in first.stdout
    records = read_records(tmp_path / "cal.jsonl")
    assert [(r["framework"], r["profile"], r["global_batch_size"]) for r in records] == [("jax", "smoke", 1024)] * 2
    assert len({r["seed"] for r in records}) == 2  # seeds of the framework's own (planned_runs)
    assert all(r["evals"] and r["rules_version"] == "1.1" for r in records)
    again = _calibrate(tmp_path, *smoke)
    assert again.returncode == 0 and "2 runs on file, 0 to run" in again.stdout
    # A target is proposed only from runs of the profile asked for: none of the submission profile here.
    proposed = _calibrate(tmp_path, "--batch-sizes", "1024", "--propose-only")
    assert proposed.returncode == 2 and "no submission-profile calibration runs" in proposed.stderr
