"""`levelfield train --throughput-only --steps N`: N timed steps, no evaluation, no target, never a result.

Every framework once on ctr-dlrm (the cheapest task; eager, as torch.compile alone takes ~30 s here and the
mode does not change the loop), on rules whose smoke runs last two epochs so that N = 6 steps wrap into the
second; one run on 2 processes; the argument errors; `levelfield package` refusing the logs and the checker
reporting one in a tree (TRN024; its planted twin is in tests/throughput_plants.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_trainer import mllog_records

from conftest import default_rules_version
from levelfield.checker.engine import check_tree
from levelfield.ground import mllog_keys as LK
from levelfield.harness.options import TrainOptions
from levelfield.harness.throughput_only import check_steps, median_and_range, step_spans
from levelfield.harness.trainer import Schedule, Trainer
from tests.conftest import REPO, assert_user_error, run_cli
from tests.submission_edit import copy_tree, reseal
from tests.test_checker_fixtures import EXAMPLE
from tests.test_package import _package, _runs_from_example

TASK = "ctr-dlrm"
FRAMEWORKS = ["pytorch", "tensorflow", "jax"]
STEPS = 6  # smoke epochs of ctr-dlrm have 4 steps: 4 of epoch 1, then 2 of epoch 2
SMOKE_TRAINING = "training: {max_epochs: 1, runs: 1, train_samples: 4096, eval_samples: 1024}"


@pytest.fixture(scope="module")
def rules_two_epochs(tmp_path_factory) -> Path:
    """The shipped rules with ctr-dlrm's smoke runs two epochs long (8 steps), so a run can wrap an epoch."""
    rules = tmp_path_factory.mktemp("rules") / "rules"
    shutil.copytree(REPO / "rules", rules, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    task_file = rules / default_rules_version() / "tasks" / f"{TASK}.yaml"
    text = task_file.read_text()
    assert text.count(SMOKE_TRAINING) == 1, "the smoke profile's training line moved: update SMOKE_TRAINING"
    task_file.write_text(text.replace(SMOKE_TRAINING, SMOKE_TRAINING.replace("max_epochs: 1", "max_epochs: 2")))
    return rules


def train_throughput(out: Path, rules: Path, framework: str, *extra: str):
    return run_cli(
        "train",
        *("--task", TASK, "--framework", framework, "--profile", "smoke", "--eager", "--seed", "21"),
        *("--throughput-only", "--steps", str(STEPS), "--rules-dir", str(rules), "--out", str(out), *extra),
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory, rules_two_epochs):
    """framework -> (its run folder, stdout): each framework's throughput-only run, made once for this module."""
    made = {}

    def run(framework: str) -> tuple[Path, str]:
        if framework not in made:
            out = tmp_path_factory.mktemp(framework) / "run"
            result = train_throughput(out, rules_two_epochs, framework)
            assert result.returncode == 0, result.stderr[-3000:]
            made[framework] = out, result.stdout
        return made[framework]

    return run


def check_throughput_log(log: Path, *, world_size: int = 1) -> dict:
    """What every throughput-only log must show; returns its records by key (the last of each)."""
    records = mllog_records(log)
    keys = [r["key"] for r in records]
    by_key = {r["key"]: r for r in records}
    assert by_key[LK.THROUGHPUT_ONLY]["value"] == STEPS
    assert keys.index(LK.THROUGHPUT_ONLY) < keys.index("init_stop")  # said before anything is trained
    # The steps the framework ran, counted from the losses it returned; the log's epochs wrap as a run's do.
    assert by_key[LK.TIMED_STEPS]["value"] == STEPS
    assert [r["metadata"]["epoch_num"] for r in records if r["key"] == "epoch_start"] == [1, 2]
    assert not {"eval_start", "eval_accuracy", "eval_stop"} & set(keys), "a throughput-only run never evaluates"
    assert (by_key["run_stop"]["metadata"]["status"], by_key["run_stop"]["metadata"]["reason"]) == (
        "aborted",
        "throughput only",
    )
    assert by_key[LK.TRAIN_SAMPLES_PER_S]["value"] > 0 and by_key[LK.STEP_TIME_MS]["value"] > 0
    assert by_key[LK.WORLD_SIZE]["value"] == world_size
    return by_key


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_throughput_only_run_trains_n_steps_and_says_what_it_is(runs, framework):
    out, stdout = runs(framework)
    by_key = check_throughput_log(out / "result_0.txt")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["throughput_only_steps"] == STEPS and summary["time_to_train_s"] is None
    (run,) = summary["runs"]
    assert (run["status"], run["reason"], run["epochs"], run["evals"]) == ("aborted", "throughput only", 2, [])
    assert run["train_samples_per_s"] == by_key[LK.TRAIN_SAMPLES_PER_S]["value"]
    assert run["peer_compliance"] is None  # MLPerf's engine requires evaluations: not judged, not "failed"
    rate = run["train_samples_per_s"]
    assert summary["throughput"]["train_samples_per_s"] == {"n": 1, "median": rate, "min": rate, "max": rate}
    assert summary["throughput"]["step_time_ms"]["median"] == run["step_time_ms"]
    assert "train samples/s" in stdout and "not a time-to-accuracy result" in stdout
    assert "time to target" not in stdout


def test_two_processes_time_n_global_steps(tmp_path, rules_two_epochs):
    out = tmp_path / "run"
    result = train_throughput(out, rules_two_epochs, "pytorch", "--nproc", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    check_throughput_log(out / "result_0.txt", world_size=2)
    assert sorted(p.name for p in out.glob("result_*")) == ["result_0.txt"]  # rank 0 alone writes
    summary = json.loads((out / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["throughput_only_steps"] == STEPS
    assert summary["throughput"]["train_samples_per_s"]["n"] == 1


def test_the_steps_are_the_first_n_of_a_full_run(tmp_path, rules_two_epochs):
    """Every timed call's batches and learning rates are the schedule's, epoch 1's then epoch 2's."""
    trainer = Trainer(
        TrainOptions(
            task_id=TASK,
            framework="pytorch",
            out=tmp_path,
            profile="smoke",
            seed=4,
            mode="eager",
            runs=1,
            rules_dir=str(rules_two_epochs),
            throughput_steps=STEPS,
        )
    )
    calls = []

    class Recorded(trainer.impl_class):  # the real implementation, its calls kept
        def train_steps(self, batch_indices, learning_rates):
            calls.append((batch_indices.copy(), learning_rates.copy()))
            return super().train_steps(batch_indices, learning_rates)

    trainer.impl_class = Recorded
    trainer.run()
    schedule = Schedule.for_run(trainer.recipe, trainer.settings, 4, trainer.task.train_samples)
    timed = calls[1:]  # the first call is the warm-up step
    np.testing.assert_array_equal(
        np.concatenate([rows for rows, _ in timed]),
        np.concatenate([schedule.batches(1), schedule.batches(2)[: STEPS - 4]]),
    )
    np.testing.assert_array_equal(np.concatenate([lrs for _, lrs in timed]), schedule.lrs[:STEPS])


def test_steps_wrap_over_epochs_and_stop_at_a_full_run():
    assert step_spans(4, 10) == [(1, 4), (2, 4), (3, 2)]
    assert step_spans(4, 4) == [(1, 4)]
    check_steps(12, steps_per_epoch=4, max_epochs=3, where="t")
    for steps in (0, 13):
        with pytest.raises(Exception, match=f"--steps {steps}: expected 1 to 12"):
            check_steps(steps, steps_per_epoch=4, max_epochs=3, where="t")


def test_the_summary_figures_are_the_median_and_range_of_the_runs_that_timed_steps():
    assert median_and_range([1200.0, None, 1150.0, 1310.0]) == {"n": 3, "median": 1200.0, "min": 1150.0, "max": 1310.0}
    assert median_and_range([None]) == {"n": 0, "median": None, "min": None, "max": None}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--throughput-only"], "--throughput-only: needs --steps N"),
        (["--steps", "3"], "--steps 3: only with --throughput-only"),
        (["--throughput-only", "--steps", "0"], "--steps 0: expected a positive number"),
        (["--throughput-only", "--steps", "3", "--save-weights"], "--save-weights: a throughput-only run is never"),
        (["--throughput-only", "--steps", "5"], "--steps 5: expected 1 to 4, the steps of a full run of ctr-dlrm"),
    ],
)
def test_throughput_only_options_that_make_no_sense_are_user_errors(tmp_path, args, message):
    result = run_cli(
        "train", "--task", TASK, "--framework", "pytorch", "--profile", "smoke", *args, "--out", str(tmp_path / "o")
    )
    assert_user_error(result, message)
    assert not (tmp_path / "o").exists()


def test_package_refuses_a_throughput_only_log(runs, tmp_path):
    out, _ = runs("pytorch")
    runs_dir, system = _runs_from_example(tmp_path)
    shutil.copytree(out, runs_dir / "pytorch-throughput")
    log = runs_dir / "pytorch-throughput" / "result_0.txt"
    result = _package(runs_dir, system, tmp_path / "sub")
    assert_user_error(result, f"{log}: line ", f"holds {LK.THROUGHPUT_ONLY} {STEPS}", "never a time-to-accuracy")
    assert f"leave {log.parent} out of --runs" in result.stderr
    assert not (tmp_path / "sub").exists()


def test_the_checker_reports_a_throughput_only_log_in_a_tree(runs, tmp_path):
    """The real log in place of a result's run: TRN024 at its levelfield_throughput_only line, whatever else
    its missing evaluations set off; without that line, its run_stop still gives it away."""
    out, _ = runs("pytorch")
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    log = next(tree.rglob(f"{TASK}/pytorch/training/result_0.txt"))
    shutil.copyfile(out / "result_0.txt", log)
    reseal(tree)
    (finding,) = [f for f in check_tree(tree).active if f.code == "TRN024"]
    assert finding.line == 1 + next(i for i, r in enumerate(mllog_records(log)) if r["key"] == LK.THROUGHPUT_ONLY)
    assert finding.found == f"{LK.THROUGHPUT_ONLY} {STEPS}"
    log.write_text("".join(line for line in log.read_text().splitlines(True) if LK.THROUGHPUT_ONLY not in line))
    reseal(tree)
    (finding,) = [f for f in check_tree(tree).active if f.code == "TRN024"]
    assert finding.found == "run_stop with reason 'throughput only'"
