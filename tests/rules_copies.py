"""Copies of the shipped rules with the example's version edited: how a fixture judges the example under other rules.

rules_dir = rules_with(tmp, lambda text, task_id: text.replace(...))       # every task file of that version
rules_dir = rules_with_rcp_points(tmp, {1024: {"pytorch": [2, 2, 3], ...}})  # ctr-dlrm's convergence points
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import REPO, example_rules_version


def rules_with(tmp, edit_task, edit_suite=lambda text: text) -> Path:
    """A copy of the rules whose example version has each task file's text through edit_task(text, task id)."""
    target = tmp / "rules"
    shutil.copytree(REPO / "rules", target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    version = target / example_rules_version()
    (version / "suite.yaml").write_text(edit_suite((version / "suite.yaml").read_text()))
    for path in (version / "tasks").glob("*.yaml"):
        path.write_text(edit_task(path.read_text(), path.stem))
    return target


def rules_with_rcp_points(tmp, points: dict[int, dict[str, list[float]]]) -> Path:
    """A rules folder whose version (the example's) judges convergence by reference convergence points
    (`checks.convergence_test: rcp`, added where the version lacks it, as 1.0 does), with ctr-dlrm's points
    `points` ({global_batch_size: {framework: epochs}}) and the other tasks uncalibrated. The method is the
    suite's key, not the version number, so the example tree exercises the RCP test in any version."""

    def rcp(text: str) -> str:
        if "\n  convergence_test: rcp\n" in text:
            return text
        return text.replace("\n  convergence_alpha:", "\n  convergence_test: rcp\n  convergence_alpha:")

    def points_of(text: str, task_id: str) -> str:
        if "\nreference_convergence:" in text:  # the last section of a calibrated task's file
            text = text[: text.index("\nreference_convergence:")] + "\n"
        if task_id == "ctr-dlrm":
            text += "reference_convergence:\n  source: synthetic points for a test\n"
            text += "  calibration: calibration/ctr-dlrm.jsonl\n  points:\n"
            for size, epochs in sorted(points.items()):
                text += f"    - global_batch_size: {size}\n      epochs_to_target: {json.dumps(epochs)}\n"
        return text

    return rules_with(tmp, points_of, rcp)
