"""The scaling efficiency (levelfield/ground/scaling.py) and `levelfield train --scaling`'s refusals.

    .venv/bin/python -m pytest tests/test_scaling.py -q

Unit tests of the computation, and the command lines `--scaling` refuses before any framework starts (about
10 s here, all of it the CLI's start-up). The 2-process runs with their 1-process reference are
tests/test_standard_multiprocess.py's.
"""

from __future__ import annotations

import pytest

from levelfield.ground import mllog_keys as LK
from levelfield.ground.scaling import REFERENCE_FOLDER, reference_record, scaling_efficiency, scaling_figures
from tests.conftest import assert_user_error, run_cli


def summary(figures: list[float | None], world_size: int = 1) -> dict:
    """A throughput-only summary.json as the trainer writes it (only the fields the reference reads)."""
    from levelfield.harness.throughput_only import median_and_range

    return {
        "world_size": world_size,
        "runs": [{"seed": 40 + i, "train_samples_per_s": f} for i, f in enumerate(figures)],
        "throughput": {"train_samples_per_s": median_and_range(figures)},
    }


@pytest.mark.parametrize(
    "samples_per_s, world_size, reference, expected",
    [
        (150.0, 2, 100.0, 0.75),  # 2 processes deliver 1.5 times one
        (200.0, 2, 100.0, 1.0),  # perfect scaling
        (400.0, 8, 100.0, 0.5),
        (90.0, 2, 100.0, 0.45),  # slower than one process: below 1/N
        (100.0, 1, 100.0, 1.0),  # one process against itself
    ],
)
def test_the_efficiency_is_n_process_samples_over_n_times_one_process(samples_per_s, world_size, reference, expected):
    assert scaling_efficiency(samples_per_s, world_size, reference) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("samples_per_s, reference", [(None, 100.0), (150.0, None), (0.0, 100.0), (150.0, 0.0)])
def test_a_missing_or_empty_figure_gives_no_efficiency(samples_per_s, reference):
    """A run that timed no step has no samples/s: no efficiency, never 0 or a division by zero."""
    assert scaling_efficiency(samples_per_s, 2, reference) is None


def test_a_world_of_no_processes_is_refused():
    with pytest.raises(ValueError, match="world_size: expected >= 1 processes, got 0"):
        scaling_efficiency(100.0, 0, 100.0)


def test_the_reference_is_the_median_of_its_runs_and_names_its_logs():
    reference = reference_record(summary([100.0, 130.0, 90.0]))
    assert reference == {
        "world_size": 1,
        "train_samples_per_s": 100.0,  # the median, as the N-process figure
        "runs": 3,
        "seeds": [40, 41, 42],
        "folder": REFERENCE_FOLDER,
    }
    assert reference_record(summary([None]))["train_samples_per_s"] is None  # no run timed a step


def test_the_summary_figures_compare_medians_and_each_run():
    reference = reference_record(summary([100.0, 120.0]))  # median 110
    figures = scaling_figures([150.0, None, 176.0, 160.0], 2, reference)
    assert figures["world_size"] == 2 and figures["reference"] == reference
    assert figures["train_samples_per_s"] == 160.0  # the median of the runs that timed a step
    assert figures["efficiency"] == pytest.approx(160.0 / 220.0)
    assert figures["per_run_efficiency"] == [
        pytest.approx(150 / 220),
        None,
        pytest.approx(0.8),
        pytest.approx(160 / 220),
    ]
    assert scaling_figures([None], 2, reference)["efficiency"] is None


BASE = ("train", "--task", "ctr-dlrm", "--framework", "jax", "--profile", "smoke")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--nproc", "2", "--scaling"], "--scaling: only with --throughput-only"),
        (
            ["--throughput-only", "--steps", "2", "--scaling"],
            "--scaling with --nproc 1 --nnodes 1: expected --nproc 2 or more on one host",
        ),
        (
            ["--throughput-only", "--steps", "2", "--nproc", "1", "--nnodes", "2", "--node-rank", "0"]
            + ["--rdzv-endpoint", "198.18.0.1:29400", "--scaling"],
            "--scaling with --nproc 1 --nnodes 2: expected --nproc 2 or more on one host",
        ),
    ],
)
def test_scaling_needs_throughput_only_runs_on_several_processes_of_one_host(args, message, tmp_path):
    out = tmp_path / "o"
    assert_user_error(run_cli(*BASE, *args, "--out", str(out)), message)
    assert not out.exists()


def test_scaling_under_a_workload_manager_is_refused(tmp_path):
    """srun starts every rank itself: levelfield cannot start the 1-process reference beside them."""
    env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0", "SLURM_STEP_NODELIST": "node1"}
    env |= {"SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_JOB_ID": "41", "SLURM_STEP_ID": "0"}
    result = run_cli(*BASE, "--throughput-only", "--steps", "2", "--scaling", "--out", str(tmp_path / "o"), env=env)
    assert_user_error(result, "--scaling: under Slurm or Open MPI the manager starts the ranks")


def test_the_reference_s_logs_are_not_overwritten_without_force(tmp_path):
    out = tmp_path / "o"
    (out / REFERENCE_FOLDER).mkdir(parents=True)
    (out / REFERENCE_FOLDER / "result_0.txt").write_text("a user's file\n")
    result = run_cli(*BASE, "--throughput-only", "--steps", "2", "--nproc", "2", "--scaling", "--out", str(out))
    assert_user_error(result, f"{out}: already holds 1 result file(s); not overwriting them")
    assert (out / REFERENCE_FOLDER / "result_0.txt").read_text() == "a user's file\n"


# --- TRN017 holds the two keys to what the trainer can log --------------------------------------------


@pytest.fixture(scope="module")
def baseline_trn017():
    from conftest import EXAMPLE

    return _trn017(EXAMPLE)


def _trn017(tree) -> list[str]:
    import levelfield.checker.checks  # noqa: F401 - registers every check
    from levelfield.checker.context import Context
    from levelfield.checker.engine import run_check
    from levelfield.ground.submission.loader import load_submission
    from levelfield.ground.submission.tree import read_tree
    from levelfield.rules import load_suite

    suite = load_suite()
    return [f.text() for f in run_check("TRN017", load_submission(read_tree(tree), suite), Context(suite))]


GOOD_REFERENCE = {"world_size": 1, "train_samples_per_s": 41.5, "runs": 3, "seeds": [7, 8, 9], "folder": "ref"}


@pytest.mark.parametrize(
    "key, value, caught",
    [
        (LK.SCALING_EFFICIENCY, 0.62, False),  # passing
        (LK.SCALING_REFERENCE, GOOD_REFERENCE, False),
        (LK.SCALING_REFERENCE, {**GOOD_REFERENCE, "train_samples_per_s": None, "runs": 0}, False),  # none timed
        (LK.SCALING_EFFICIENCY, -0.5, True),  # failing
        (LK.SCALING_EFFICIENCY, "0.62", True),
        (LK.SCALING_REFERENCE, {**GOOD_REFERENCE, "world_size": 2}, True),
        (LK.SCALING_REFERENCE, {**GOOD_REFERENCE, "train_samples_per_s": 0}, True),
        (LK.SCALING_REFERENCE, {k: v for k, v in GOOD_REFERENCE.items() if k != "folder"}, True),
    ],
)
def test_trn017_holds_the_scaling_keys_to_their_domains(key, value, caught, tmp_path, baseline_trn017):
    from conftest import EXAMPLE
    from tests.node_plants import log_beside_world_size
    from tests.submission_edit import copy_tree, reseal

    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    log = next(tree.rglob("training/result_0.txt"))
    log_beside_world_size(log, key, value)
    reseal(tree)
    new = [text for text in _trn017(tree) if text not in baseline_trn017]
    if caught:
        (finding,) = new
        assert f"{key} outside its domain" in finding
    else:
        assert new == []
