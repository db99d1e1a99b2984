"""One olympic mean: the trainer's summary.json, the checker's score and the leaderboard row agree.

    .venv/bin/python -m pytest tests/test_time_to_train_agreement.py -q

A result with a failed run (one that did not reach the target) is where the
three used to differ: the trainer averaged the successful runs only, while
MLPerf (and the leaderboard) count the failed run as the slowest. The
trainer's figures are built from its own RunOutcome records through the
summary code `Trainer.run` uses; the checker's and the leaderboard's from the
same times written as MLLOG logs in a submission tree (tests/test_leaderboard.py's
writer), read by the checker's loader.
"""

from __future__ import annotations

import pytest
from test_leaderboard import TASK, _loaded, document, row, write_tree

from levelfield.ground.training_log import training_score
from levelfield.harness.run_outcome import RunOutcome
from levelfield.harness.trainer import time_to_train_figures
from levelfield.rules import load_suite
from levelfield.tools.leaderboard import render

TIMES_S = [20.0, 21.0, 22.0, 23.0, None]  # the last run stopped at max epochs, below the target
DROP = load_suite("1.0").task(TASK).training["olympic_drop"]


def outcome(index: int, seconds: float | None) -> RunOutcome:
    return RunOutcome(
        index=index,
        seed=2000 + index,
        status="success" if seconds is not None else "aborted",
        reason="target reached" if seconds is not None else "max epochs",
        epochs=2,
        time_to_train_s=seconds,
        time_to_first_step_s=1.5,
        peak_rss_mib=400.0,
    )


def test_a_failed_run_gives_one_olympic_mean_in_summary_checker_and_leaderboard(tmp_path):
    summary = time_to_train_figures([outcome(i, s) for i, s in enumerate(TIMES_S)], DROP)
    tree = write_tree(tmp_path / "acme", training={"tensorflow": TIMES_S}, inference={})
    (training,) = _loaded(tree)["submission"].trainings
    checker = training_score(sorted(training.logs, key=lambda log: log.path), DROP)
    leaderboard = row(document(tree), "tensorflow")["time_to_target_s"]
    # MLPerf: drop the fastest (20) and the failed run (the slowest) -> mean(21, 22, 23) = 22, not the
    # successful runs' olympic mean(21, 22) = 21.5 that summary.json used to hold.
    assert summary["olympic_mean"] == pytest.approx(22.0)
    assert summary == checker == leaderboard


def test_train_prints_the_olympic_mean_with_the_failed_run(tmp_path, capsys):
    from levelfield.cli.commands.train import print_summary

    outcomes = [outcome(i, s) for i, s in enumerate(TIMES_S)]
    runs = [{**vars(o), "peer_compliance": True} for o in outcomes]
    print_summary(
        {
            "runs": runs,
            "quality_metric": "roc_auc",
            "interrupted_by": None,
            "time_to_train_s": time_to_train_figures(outcomes, DROP),
        },
        tmp_path,
    )
    out = capsys.readouterr().out
    assert (
        "olympic mean time to target: 22.0 s over 5 runs (drop 1 from each end, 1 failed counted as the "
        "slowest); successful runs' mean 21.5 s, 95% CI [19.4, 23.6]" in out
    )


def test_a_single_run_is_labelled_a_single_run_everywhere(tmp_path, capsys):
    from levelfield.cli.commands.train import print_summary

    summary = time_to_train_figures([outcome(0, 12.5)], DROP)
    tree = write_tree(tmp_path / "acme", training={"pytorch": [12.5]}, inference={})
    doc = document(tree)
    leaderboard = row(doc, "pytorch")["time_to_target_s"]
    assert summary == leaderboard and (leaderboard["olympic_mean"], leaderboard["single_run_s"]) == (None, 12.5)
    assert " 12.50 (single run) |" in render(doc, "md")  # the demo's table: a time, not a dash
    runs = [
        {
            "index": 0,
            "seed": 2000,
            "status": "success",
            "reason": "target reached",
            "epochs": 2,
            "peer_compliance": True,
            "evals": [[2, 0.83]],
            "time_to_train_s": 12.5,
            "time_to_first_step_s": 1.5,
            "peak_rss_mib": 400.0,
        }
    ]
    print_summary(
        {"runs": runs, "quality_metric": "roc_auc", "time_to_train_s": summary, "interrupted_by": None}, tmp_path
    )
    out = capsys.readouterr().out
    assert "single run (not an olympic mean): 12.5 s" in out and "olympic mean time" not in out
