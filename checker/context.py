"""What a check may use besides the submission: the rules, the profile, the eval labels, the trusted keys.

    context = Context(load_suite(), data_dir=None, profile="submission")
    context.task("fmnist-resnet").quality["target"]  # the task's rules as the checked profile sets them
    context.labels("fmnist-resnet")                  # the full eval set's labels (numpy), for re-scoring

Every check takes one (checks/*.py); the engine builds it once per tree. Apart
from engine.py because the engine imports every check to register it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from levelfield.ground.signing import PublicKey
    from levelfield.rules.loader import Suite, Task

# Submissions are judged against this profile unless the auditor asks for another (the demo's).
SUBMISSION_PROFILE = "submission"


class Context:
    """What checks may use besides the submission: the rules, the profile every run is judged
    against, the dataset labels for re-scoring, and the auditor's trusted signing keys (None: the
    auditor asked for no signature policy)."""

    def __init__(
        self,
        suite: Suite,
        data_dir: str | None = None,
        profile: str = SUBMISSION_PROFILE,
        trusted_keys: list[PublicKey] | None = None,
    ):
        self.suite = suite
        self.data_dir = data_dir
        self.profile = profile
        self.trusted_keys = trusted_keys
        self.cache: dict = {}  # results several checks share (e.g. an accuracy re-score), by name

    def task(self, task_id: str) -> Task:
        """The task's rules as the checked profile sets them (run lengths, and the demo's own target)."""
        return self.suite.task(task_id).for_profile(self.profile)

    def labels(self, task_id: str) -> np.ndarray:
        """Eval labels of the task's full eval set (numpy); UserError when the data is absent."""
        task = self.suite.task(task_id)
        key = (str(task.path), self.data_dir)
        if key not in _LABELS:
            _LABELS[key] = _eval_labels(task, self.data_dir)
        return _LABELS[key]


# Eval labels by (task rules file, data dir), kept for the process: generating or reading a dataset
# takes seconds, and its SHA-256 is verified against the rules on the way, so a key always yields
# the same labels.
_LABELS: dict[tuple, object] = {}


def _eval_labels(task, data_dir: str | None):
    from levelfield.ground.registry import task_module
    from levelfield.reference.datasets import load_dataset

    inputs = task_module(task, "inputs")
    return inputs.labels(load_dataset(task, data_dir), "eval")
