"""The planted defect for TRN025 (collected into PLANTS by test_checker_fixtures.py): a provisional target.

The example submission is ctr-dlrm, whose target is calibrated; the plant judges it by a rules copy in
which that target (in the example's rules version) is marked provisional, as every standard-size task's
is in rules 1.1 (tests/test_standard_rules.py holds them to it), so its training results are no longer
submittable.
"""

from __future__ import annotations

from pathlib import Path

from tests.rules_copies import rules_with


def rules_with_provisional_target(tmp: Path, task_id: str = "ctr-dlrm") -> Path:
    """A copy of the rules whose `task_id` has `quality.provisional: true` in the example's version."""

    def provisional(text: str, task: str) -> str:
        if task != task_id:
            return text
        assert "\n  provisional: false\n" in text, f"fixture text not in {task_id}'s rules"
        return text.replace("\n  provisional: false\n", "\n  provisional: true\n", 1)

    return rules_with(tmp, provisional)


def plant_trn025(tree, tmp):
    # The example's ctr-dlrm training results, judged by rules in which ctr-dlrm's target is provisional.
    return {"rules_dir": str(rules_with_provisional_target(tmp))}
