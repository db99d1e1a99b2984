"""The trainer's small parts: a run's first record, its schedule, and a signal while its end is logged.

The whole `levelfield train` path (keys in order, seeds, SIGTERM mid-run, a failed run) is in
test_trainer.py; these pin what Trainer.run_one's steps hand each other, in this process.
"""

from __future__ import annotations

import os
import signal
import types
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from test_trainer import mllog_records

from levelfield.harness import trainer as trainer_module
from levelfield.harness.options import TrainOptions
from levelfield.harness.run_outcome import RunOutcome
from levelfield.harness.trainer import Schedule, Trainer
from levelfield.reference.interface import Recipe
from levelfield.reference.schedule import batch_order, learning_rates
from levelfield.rules import load_suite

TASK = "ctr-dlrm"


# -- RunOutcome.started ------------------------------------------------------------------------
def test_a_run_starts_as_interrupted_until_it_gets_further(tmp_path):
    outcome = RunOutcome.started(3, 1003, tmp_path / "result_3.txt")
    assert (outcome.index, outcome.seed, outcome.status, outcome.reason) == (3, 1003, "aborted", "interrupted")
    assert (outcome.epochs, outcome.time_to_train_s, outcome.evals) == (0, None, [])
    assert (outcome.time_to_first_step_s, outcome.peak_rss_mib) == (0.0, 0.0)
    assert outcome.log == str(tmp_path / "result_3.txt")
    assert RunOutcome.started(0, 1, None).log == ""  # ranks other than 0 write no log
    assert RunOutcome.started(0, 1, None).evals is not outcome.evals


def test_run_outcomes_are_built_by_keyword_only():
    with pytest.raises(TypeError):
        RunOutcome(0, 1, "aborted", "interrupted", 0, None, 0.0, 0.0)


def test_summary_run_entries_keep_their_key_order(tmp_path):
    """summary.json's `runs` entries are asdict(RunOutcome): reordering the fields would change the file."""
    assert list(asdict(RunOutcome.started(0, 1, tmp_path / "r.txt"))) == [
        "index",
        "seed",
        "status",
        "reason",
        "epochs",
        "time_to_train_s",
        "time_to_first_step_s",
        "peak_rss_mib",
        "evals",
        "log",
        "peak_device_memory_mib",
        "device_memory_used_mib",
        "energy_j",
        "train_samples_per_s",
        "step_time_ms",
        "scaling_efficiency",
        "resources",
    ]


# -- Schedule ----------------------------------------------------------------------------------
@pytest.fixture
def recipe() -> Recipe:
    return Recipe.from_task(load_suite().task(TASK))


def test_the_schedule_is_reference_schedules_order_and_rates(recipe):
    batch = recipe.global_batch_size
    train_samples = 5 * batch + 7  # a partial last batch is dropped
    schedule = Schedule.for_run(recipe, {"max_epochs": 3, "eval_every_epochs": 1}, 42, train_samples)
    assert schedule.steps_per_epoch == 5
    np.testing.assert_array_equal(schedule.lrs, learning_rates(recipe, 5, 3))
    for epoch in (0, 1, 3):  # epoch 0: the warm-up's batches
        np.testing.assert_array_equal(schedule.batches(epoch), batch_order(42, epoch, train_samples, batch))
    np.testing.assert_array_equal(schedule.epoch_lrs(2), schedule.lrs[5:10])
    assert sum(len(schedule.epoch_lrs(e)) for e in (1, 2, 3)) == len(schedule.lrs)


@pytest.mark.parametrize(
    "every, max_epochs, evaluated", [(1, 3, [1, 2, 3]), (2, 5, [2, 4, 5]), (4, 4, [4]), (3, 2, [2])]
)
def test_an_epoch_cadence_evaluates_at_epoch_ends_and_always_ends_the_run(recipe, every, max_epochs, evaluated):
    schedule = Schedule.for_run(
        recipe, {"max_epochs": max_epochs, "eval_every_epochs": every}, 0, 3 * recipe.global_batch_size
    )
    found = [num for e in range(1, max_epochs + 1) for *_, num in schedule.segments(e) if num is not None]
    assert found == evaluated
    assert all(isinstance(num, int) for num in found)  # rules 1.0 logs integer epochs


def test_a_sample_cadence_cuts_epochs_into_segments_with_fractional_epochs(recipe):
    batch = recipe.global_batch_size
    schedule = Schedule.for_run(recipe, {"max_epochs": 2, "eval_every_samples": 2 * batch}, 0, 8 * batch)
    assert schedule.segments(1) == [(0, 2, 0.25), (2, 4, 0.5), (4, 6, 0.75), (6, 8, 1.0)]
    assert schedule.segments(2)[0] == (0, 2, 1.25)
    odd = Schedule.for_run(recipe, {"max_epochs": 1, "eval_every_samples": 3 * batch}, 0, 8 * batch)
    assert odd.segments(1) == [(0, 3, 3 / 8), (3, 6, 6 / 8), (6, 8, 1.0)]  # the epoch's end is always one


# -- run_one's end under signals, in this process ----------------------------------------------
def smoke_trainer(out: Path, **options) -> Trainer:
    return Trainer(
        TrainOptions(
            task_id=TASK, framework="pytorch", out=out, profile="smoke", seed=5, mode="eager", runs=2, **options
        )
    )


def test_a_signal_while_the_run_end_is_logged_is_recorded_not_raised(tmp_path, monkeypatch):
    """run_stop must be written whole: the signal waits, the run keeps its status, no further run starts."""
    trainer = smoke_trainer(tmp_path)
    trainer.metric_module = types.SimpleNamespace(score=lambda predicted, labels: 1.0)  # reaches any target

    def peak_rss_mib_then_sigterm() -> float:  # _finish's first reading: run_stop is not written yet
        os.kill(os.getpid(), signal.SIGTERM)
        return 1.0

    monkeypatch.setattr(trainer_module, "peak_rss_mib", peak_rss_mib_then_sigterm)
    summary = trainer.run()
    assert summary["interrupted_by"] == "SIGTERM"
    assert [(r["status"], r["reason"]) for r in summary["runs"]] == [("success", "target reached")]
    assert summary["runs"][0]["time_to_train_s"] > 0
    records = mllog_records(tmp_path / "result_0.txt")
    assert records[-1]["key"] == "run_stop" and records[-1]["metadata"]["status"] == "success"
    assert not (tmp_path / "result_1.txt").exists() and not (tmp_path / "result_1.txt.inprogress").exists()


def test_a_signal_in_the_warm_up_aborts_before_run_start(tmp_path):
    trainer = smoke_trainer(tmp_path)

    class SignalledInWarmUp(trainer.impl_class):
        def train_steps(self, batch_indices, learning_rates):
            os.kill(os.getpid(), signal.SIGINT)  # the first call is the warm-up step
            return super().train_steps(batch_indices, learning_rates)

    trainer.impl_class = SignalledInWarmUp
    summary = trainer.run()
    assert summary["interrupted_by"] == "SIGINT"
    (run,) = summary["runs"]
    assert (run["status"], run["reason"], run["epochs"], run["time_to_train_s"]) == ("aborted", "interrupted", 0, None)
    keys = [r["key"] for r in mllog_records(tmp_path / "result_0.txt")]
    assert "run_start" not in keys and keys[-2:] == ["levelfield_peak_rss_mib", "run_stop"]
