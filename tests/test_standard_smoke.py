"""Every standard-class task x framework at FULL model size: a throughput-only training and a LoadGen smoke run.

Issue 23's acceptance: the shipped model runs in every framework. The tasks are those of rules 1.1 whose
`size_class` is standard, read from the rules, so a new standard task is covered when it lands. What keeps
this affordable on a 2-core CPU is the rules' smoke profile of each standard task (docs/scale.md, "Smoke
tests"): its own global batch (seq-transformer-standard: 2 rows, 3.5 s of BERT-base per row and step here)
and few Offline samples (2 there); each training run times one step after the untimed warm-up.

Compiled, as a vendor runs, except where EAGER says why not. `--durations` on the 2-core CPU beside other work:
13-41 s per run, 6 minutes for the module (docs/scale.md, "Smoke tests", has the breakdown).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_trainer import mllog_records

from levelfield.ground import mllog_keys as LK
from levelfield.rules import load_suite
from tests.conftest import assert_user_error, run_cli
from tests.test_package import _package, _runs_from_example

RULES_VERSION = "1.1"
SUITE = load_suite(RULES_VERSION)
TASKS = sorted(task.id for task in SUITE.tasks.values() if task.size_class == "standard")
FRAMEWORKS = ["pytorch", "tensorflow", "jax"]
CASES = [(task, framework) for task in TASKS for framework in FRAMEWORKS]
STEPS = 1  # timed steps of a throughput-only run: one steady step is a figure; each costs seconds here
SCENARIO = "offline"  # no early stopping, so the smoke profile's few samples are VALID (SingleStream needs 64)
# (task, framework, command) run eager, with the reason; the rest compiled. Every framework runs compiled on
# ctr-dlrm-standard, and JAX on every task (its eager training step is slower than its compilation at BERT-base
# size).
EAGER = {
    ("seq-transformer-standard", "pytorch", "train"): "torch.compile of the step: 44 s here, XLA's 19 s, jit's 11 s",
    ("seq-transformer-standard", "tensorflow", "train"): "XLA's compilation: the run takes 45 s compiled, 25 s eager",
    (
        "seq-transformer-standard",
        "pytorch",
        "infer",
    ): "torch.compile of predict: the run takes 33 s compiled, 16 s eager",
    ("image-resnet50-standard", "pytorch", "train"): "torch.compile of the ResNet-50 step: the run takes 84 s compiled",
    ("image-resnet50-standard", "pytorch", "infer"): "torch.compile of predict: the run takes 113 s compiled",
}
TIMEOUT_S = 600  # a run that hangs fails the test instead of the CI job


def mode(task: str, framework: str, command: str) -> str:
    return "eager" if (task, framework, command) in EAGER else "compiled"


def mode_flag(task: str, framework: str, command: str) -> str:
    return {"eager": "--eager", "compiled": "--compile"}[mode(task, framework, command)]


def test_the_standard_tasks_are_read_from_the_rules():
    """An empty list would parametrise every test below away, silently."""
    assert {"ctr-dlrm-standard", "seq-transformer-standard"} <= set(TASKS)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(task, framework) -> (its throughput-only run folder, stdout), each made once for this module."""
    made = {}

    def train(task: str, framework: str) -> tuple[Path, str]:
        if (task, framework) not in made:
            out = tmp_path_factory.mktemp(f"{task}-{framework}") / "run"
            result = run_cli(
                *("train", "--task", task, "--rules-version", RULES_VERSION, "--framework", framework),
                *("--profile", "smoke", mode_flag(task, framework, "train"), "--seed", "3"),
                *("--throughput-only", "--steps", str(STEPS), "--out", str(out)),
                timeout_s=TIMEOUT_S,
            )
            assert result.returncode == 0, result.stderr[-3000:]
            made[task, framework] = out, result.stdout
        return made[task, framework]

    return train


@pytest.mark.parametrize("task, framework", CASES)
def test_a_throughput_only_run_of_the_full_size_model_reports_its_throughput(trained, task, framework):
    out, stdout = trained(task, framework)
    by_key = {r["key"]: r for r in mllog_records(out / "result_0.txt")}
    assert by_key[LK.THROUGHPUT_ONLY]["value"] == STEPS and by_key[LK.TIMED_STEPS]["value"] == STEPS
    assert by_key[LK.COMPILE_MODE]["value"] == mode(task, framework, "train")
    smoke = SUITE.task(task).for_profile("smoke")
    batch = smoke.training.get("global_batch_size", smoke.hyperparameters["tunable"]["global_batch_size"]["default"])
    assert by_key["global_batch_size"]["value"] == batch  # the smoke profile's, from the rules
    assert by_key["run_stop"]["metadata"]["reason"] == "throughput only"
    assert not {"eval_start", "eval_accuracy"} & set(by_key), "a throughput-only run never evaluates"
    summary = json.loads((out / "summary.json").read_text())
    (run,) = summary["runs"]
    assert summary["throughput_only_steps"] == STEPS and summary["time_to_train_s"] is None
    assert run["train_samples_per_s"] > 0 and run["step_time_ms"] > 0
    assert summary["throughput"]["train_samples_per_s"]["median"] == run["train_samples_per_s"]
    assert "train samples/s" in stdout and "not a time-to-accuracy result" in stdout


@pytest.mark.parametrize("task", TASKS)
def test_package_refuses_a_standard_throughput_only_run(trained, task, tmp_path):
    out, _ = trained(task, "jax")
    runs_dir, system = _runs_from_example(tmp_path)
    shutil.copytree(out, runs_dir / f"{task}-throughput")
    result = _package(runs_dir, system, tmp_path / "sub")
    assert_user_error(result, f"holds {LK.THROUGHPUT_ONLY} {STEPS}", "never a time-to-accuracy result")
    assert not (tmp_path / "sub").exists()


@pytest.mark.parametrize("task, framework", CASES)
def test_a_loadgen_smoke_run_of_the_full_size_model_is_valid(task, framework, tmp_path):
    out = tmp_path / SCENARIO
    result = run_cli(
        *("infer", "--task", task, "--rules-version", RULES_VERSION, "--framework", framework),
        *(mode_flag(task, framework, "infer"), "--scenario", SCENARIO, "--mode", "performance", "--profile", "smoke"),
        *("--quiet", "--out", str(out)),
        timeout_s=TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((out / "result.json").read_text())
    assert (record["task"], record["rules_version"], record["profile"]) == (task, RULES_VERSION, "smoke")
    assert record["compile_mode"] == mode(task, framework, "infer")
    assert [run["result_validity"] for run in record["runs"]] == ["VALID"]
    assert record["samples_per_s"] > 0
