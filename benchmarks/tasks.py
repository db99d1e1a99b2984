"""A task's rules, its numpy-only modules and its data, as the trainer reads them (no framework imported).

t = load_task("ctr-dlrm", "smoke")
(train_inputs, train_labels), (eval_inputs, eval_labels) = t.splits()
t.spec.init_weights(0); t.metric.score(logits, labels)
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType


@dataclass
class TaskKit:
    task: object  # levelfield.rules.Task as the profile sees it
    inputs: ModuleType  # reference/<task>/common/inputs.py
    metric: ModuleType
    spec: ModuleType  # model_spec: init_weights

    def splits(self):
        """((train inputs, labels), (eval inputs, labels)): the profile's first n rows, as the trainer takes them."""
        from levelfield.reference.datasets import load_dataset

        arrays = load_dataset(self.task)

        def split(name: str, n: int):
            return (
                {k: v[:n] for k, v in self.inputs.model_inputs(arrays, name).items()},
                self.inputs.labels(arrays, name)[:n],
            )

        return split("train", self.task.train_samples), split("eval", self.task.eval_samples)


def load_task(task_id: str, profile: str) -> TaskKit:
    from levelfield.ground.registry import task_module
    from levelfield.rules import load_suite

    suite = load_suite()
    suite.check_id("profile", profile)
    task = suite.task(task_id).for_profile(profile)
    return TaskKit(task, *(task_module(task, part) for part in ("inputs", "metric", "model_spec")))
