"""The calibration proposal: a target every run reaches, and each run's epochs to it."""

from levelfield.reference.harness.calibrate import propose


def test_target_is_the_worst_best_value_rounded_down():
    curves = {
        "pytorch": {1: [[1, 0.80], [2, 0.86], [3, 0.884]], 2: [[1, 0.82], [2, 0.87], [3, 0.90]]},
        "jax": {1: [[1, 0.79], [2, 0.885], [3, 0.881]]},
    }
    proposal = propose(curves, step=0.005, margin=0.0)
    assert proposal["target"] == 0.88 and proposal["worst_best_value"] == 0.884
    assert proposal["epochs_to_target"] == {"pytorch": {1: 3, 2: 3}, "jax": {1: 2}}


def test_margin_lowers_the_target():
    proposal = propose({"tf": {1: [[1, 0.5], [2, 0.7]]}}, step=0.01, margin=0.02)
    assert proposal["target"] == 0.68 and proposal["epochs_to_target"] == {"tf": {1: 2}}


def test_a_user_mistake_is_one_line_not_a_traceback():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "levelfield.reference.harness.calibrate", "--task", "nope", "--out", "/tmp/x"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "unknown task 'nope'" in done.stderr and "Traceback" not in done.stderr
