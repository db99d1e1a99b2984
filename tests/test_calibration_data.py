"""Every calibrated task file says exactly what its committed calibration data gives.

A task file's quality target and reference convergence points are not typed in:
levelfield/harness/calibrate.py proposes them from the raw per-run records in the
rules version's calibration/<task>.jsonl by the rule the task file states
(quality.target_rule). This test re-derives them, so an edited number, a dropped
run or a changed rule fails here.
"""

from __future__ import annotations

import pytest

from levelfield.harness.calibrate import propose, read_records
from levelfield.rules import load_suite
from levelfield.rules.loader import available_versions, rules_root


def calibrated_tasks():
    for version in available_versions(rules_root()):
        suite = load_suite(version)
        for task in suite.tasks.values():
            if (task.reference_convergence or {}).get("calibration"):
                yield pytest.param(suite, task, id=f"{version}-{task.id}")


CALIBRATED = list(calibrated_tasks())


@pytest.mark.skipif(not CALIBRATED, reason="no task of any rules version is calibrated from data yet")
@pytest.mark.parametrize("suite, task", CALIBRATED)
def test_target_and_points_are_what_the_calibration_data_gives(suite, task):
    rcp = task.reference_convergence
    path = suite.path / rcp["calibration"]
    batch_sizes = [point["global_batch_size"] for point in rcp["points"]]
    records = [r for r in read_records(path) if r["global_batch_size"] in batch_sizes]
    assert {r["task"] for r in records} == {task.id}
    (calibrated_under,) = {r["rules_version"] for r in records}
    if calibrated_under != suite.version:  # an earlier version's calibration, carried over byte for byte
        assert (suite.path.parent / calibrated_under / rcp["calibration"]).read_bytes() == path.read_bytes()
    proposal = propose(records, **task.quality["target_rule"])
    assert proposal["target"] == task.quality["target"]
    derived = [
        {
            "global_batch_size": point["global_batch_size"],
            "epochs_to_target": {
                fw: [e for e in runs if e is not None] for fw, runs in point["epochs_to_target"].items()
            },
        }
        for point in proposal["points"]
    ]
    assert derived == rcp["points"]
    missed = proposal["runs"] - proposal["runs_reaching_target"]
    assert missed <= (1 - task.quality["target_rule"]["reach"]) * proposal["runs"]


@pytest.mark.skipif(not CALIBRATED, reason="no task of any rules version is calibrated from data yet")
@pytest.mark.parametrize("suite, task", CALIBRATED)
def test_calibration_runs_are_every_framework_at_every_point_on_seeds_of_its_own(suite, task):
    """At least 5 runs per framework and batch size, and no seed shared between frameworks: the three
    implementations compute the same network from a seed, so a shared seed would count one sample thrice."""
    rcp = task.reference_convergence
    records = read_records(suite.path / rcp["calibration"])
    for point in rcp["points"]:
        batch = point["global_batch_size"]
        seeds = {
            fw: {r["seed"] for r in records if r["framework"] == fw and r["global_batch_size"] == batch}
            for fw in suite.frameworks
        }
        assert all(len(s) >= 5 for s in seeds.values()), seeds
        assert sum(len(s) for s in seeds.values()) == len(set().union(*seeds.values())), f"batch {batch}: {seeds}"
