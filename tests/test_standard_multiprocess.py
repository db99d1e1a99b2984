"""A standard task on 2 processes in every framework: `levelfield train --throughput-only --nproc 2 --scaling`.

    .venv/bin/python -m pytest tests/test_standard_multiprocess.py -q

One command per framework, the cheapest that exercises what is new (issue 35, items 5 and 7):
image-resnet50-standard at full size, the only standard task with an input pipeline, so each rank's own
pipeline feeds its share of the global batch; the smoke profile (global batch 4: 2 rows per rank, 16
images), its one warm-up step and one timed step, one run (`--runs 1`: the rules' 3 repeats of a throughput
result would triple the cost and test nothing more here); `--scaling`, so the same run on 1 process is timed first (into
OUT/scaling_reference/) and each log records the scaling efficiency against it; and `--set precision=bf16`
(rules 1.2), so the same logs show bf16 mixed precision logged and judged by TRN008 at full size. PyTorch runs
eager and TensorFlow and JAX compiled, as tests/test_standard_smoke.py (its EAGER table says why).

Cost here, 2-core CPU shared with other sessions (load average ~20, 2026-11-28): see docs/scale.md,
"Several processes", for the measured figures. The math of N processes against one is tests/
test_multiprocess_step.py's (the recommender's sparse gradients there, at reduced tables); the per-step
agreement of bf16 with fp32 is each standard task's equivalence test's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_trainer import mllog_records

from levelfield.ground import mllog_keys as LK
from levelfield.ground.errors import UserError
from levelfield.ground.scaling import REFERENCE_FOLDER, scaling_efficiency
from levelfield.rules import load_suite
from tests.conftest import run_cli
from tests.submission_edit import edit_mllog, set_value

TASK = "image-resnet50-standard"
RULES_VERSION = "1.2"  # the first rules that let a standard task train in bf16
FRAMEWORKS = ["pytorch", "tensorflow", "jax"]
EAGER = {"pytorch"}  # torch.compile of the ResNet-50 step: over a minute here (tests/test_standard_smoke.py)
NPROC = 2
SEED = 3
STEPS = 1
BATCH = 4  # the smoke profile's global batch (rules), split 2 + 2
TIMEOUT_S = 1500  # the reference and the 2 ranks, on a loaded 2-core machine


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    """framework -> (its run folder, stdout), each made once for this module."""
    made = {}

    def run(framework: str) -> tuple[Path, str]:
        if framework not in made:
            out = tmp_path_factory.mktemp(framework) / "run"
            result = run_cli(
                *("train", "--task", TASK, "--framework", framework, "--rules-version", RULES_VERSION),
                *("--profile", "smoke", "--seed", str(SEED), "--eager" if framework in EAGER else "--compile"),
                *("--throughput-only", "--steps", str(STEPS), "--runs", "1", "--nproc", str(NPROC), "--scaling"),
                *("--set", "precision=bf16", "--out", str(out)),
                timeout_s=TIMEOUT_S,
            )
            assert result.returncode == 0, result.stderr[-3000:]
            made[framework] = out, result.stdout
        return made[framework]

    return run


def values(log: Path) -> dict:
    return {r["key"]: r["value"] for r in mllog_records(log)}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_two_processes_train_the_global_batch_each_rank_through_its_own_pipeline(scaled, framework):
    out, _ = scaled(framework)
    assert sorted(p.name for p in out.iterdir()) == ["result_0.txt", REFERENCE_FOLDER, "summary.json"]  # rank 0's
    value = values(out / "result_0.txt")
    assert (value[LK.WORLD_SIZE], value[LK.NODES], value["global_batch_size"]) == (NPROC, 1, BATCH)
    assert value[LK.LOCAL_BATCH_SIZE] == BATCH // NPROC  # each rank's share; its pipeline cuts those rows
    assert value[LK.INPUT_WORKERS] >= 1  # a pipeline per rank, with workers of its own CPU share
    assert value[LK.DISTRIBUTED_BACKEND]
    span = {"pytorch": BATCH // NPROC, "tensorflow": BATCH // NPROC, "jax": BATCH}[framework]  # batch norm
    assert value["model_bn_span"] == span
    assert (value[LK.THROUGHPUT_ONLY], value[LK.TIMED_STEPS]) == (STEPS, STEPS)
    assert value[LK.PRECISION] == "bf16"  # read back from the framework's objects


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_efficiency_is_recorded_against_the_1_process_reference_run_side_by_side(scaled, framework):
    out, stdout = scaled(framework)
    value = values(out / "result_0.txt")
    reference_log = values(out / REFERENCE_FOLDER / "result_0.txt")
    # The reference is the same run on one process: seed, recipe, steps; only the processes differ.
    for key in ("seed", "global_batch_size", LK.PRECISION, LK.THROUGHPUT_ONLY, LK.TIMED_STEPS, LK.COMPILE_MODE):
        assert reference_log[key] == value[key], key
    assert (reference_log[LK.WORLD_SIZE], reference_log[LK.LOCAL_BATCH_SIZE]) == (1, BATCH)
    assert LK.SCALING_REFERENCE not in reference_log
    reference = value[LK.SCALING_REFERENCE]
    assert reference == {
        "world_size": 1,
        "train_samples_per_s": reference_log[LK.TRAIN_SAMPLES_PER_S],  # its one run's figure is the median
        "runs": 1,
        "seeds": [SEED],
        "folder": REFERENCE_FOLDER,
    }
    expected = value[LK.TRAIN_SAMPLES_PER_S] / (NPROC * reference_log[LK.TRAIN_SAMPLES_PER_S])
    assert value[LK.SCALING_EFFICIENCY] == pytest.approx(expected, rel=1e-9)
    summary = json.loads((out / "summary.json").read_text())
    scaling = summary["scaling"]
    assert scaling["efficiency"] == pytest.approx(expected, rel=1e-9) and scaling["reference"] == reference
    assert scaling["efficiency"] == scaling_efficiency(
        summary["runs"][0]["train_samples_per_s"], NPROC, reference["train_samples_per_s"]
    )
    assert json.loads((out / REFERENCE_FOLDER / "summary.json").read_text())["world_size"] == 1
    assert "scaling efficiency: " in stdout and f"in {REFERENCE_FOLDER}/" in stdout


def trn008(log: Path, framework: str, version: str) -> list[str]:
    """TRN008's findings on a tree holding `log` as the framework's one training run (the smoke profile,
    whose global batch the rules allow there)."""
    import levelfield.checker.checks  # noqa: F401 - registers every check
    from levelfield.checker.context import Context
    from levelfield.checker.engine import run_check
    from levelfield.ground.submission.loader import load_submission
    from levelfield.ground.submission.tree import read_tree

    root = log.parent.parent / f"tree-{version}-{log.parent.name}"
    folder = root / "closed/levelfield/results/box" / TASK / framework / "training"
    folder.mkdir(parents=True)
    shutil.copy(log, folder / "result_0.txt")
    suite = load_suite(version)
    return [
        f.text() for f in run_check("TRN008", load_submission(read_tree(root), suite), Context(suite, profile="smoke"))
    ]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_trn008_takes_the_bf16_logs_under_1_2_and_refuses_them_under_1_1_and_fp16(scaled, framework, tmp_path):
    out, _ = scaled(framework)
    log = tmp_path / "bf16" / "result_0.txt"
    log.parent.mkdir()
    shutil.copy(out / "result_0.txt", log)
    assert trn008(log, framework, RULES_VERSION) == []  # passing: bf16 is a 1.2 choice
    (fixed,) = trn008(log, framework, "1.1")  # failing: 1.1 fixes fp32
    assert "fixed hyperparameter precision changed (found bf16, expected fp32)" in fixed
    fp16 = tmp_path / "fp16" / "result_0.txt"
    fp16.parent.mkdir()
    shutil.copy(log, fp16)
    edit_mllog(fp16, LK.PRECISION, set_value("fp16"))
    (outside,) = trn008(fp16, framework, RULES_VERSION)  # failing: fp16 is not a 1.2 choice for this task
    assert 'tunable hyperparameter precision outside the rules (found fp16, expected ["fp32", "bf16"])' in outside


def test_the_recommender_refuses_several_pytorch_processes_on_cuda(monkeypatch):
    """NCCL has no sparse all-reduce: ctr-dlrm-standard's PyTorch ranks run on CPUs only, refused on GPUs in
    one line before any rank starts (a GPU faked: this machine has none)."""
    from levelfield.cli.launch import checks
    from levelfield.harness.options import TrainOptions
    from levelfield.harness.trainer import Trainer
    from levelfield.harness.world import Layout

    monkeypatch.setattr(checks, "visible_gpus", lambda framework: 2)
    options = TrainOptions(task_id="ctr-dlrm-standard", framework="pytorch", out=Path("unused"), profile="smoke")
    with pytest.raises(UserError, match="ctr-dlrm-standard/pytorch trains with several processes on cpu only, "):
        checks.check_launch(Trainer(options), Layout(nproc=2))
    jax_options = TrainOptions(task_id="ctr-dlrm-standard", framework="jax", out=Path("unused"), profile="smoke")
    assert checks.check_launch(Trainer(jax_options), Layout(nproc=2)) == "cuda"  # dense all-reduce: any device
