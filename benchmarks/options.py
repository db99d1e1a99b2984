"""What every benchmark module receives from the command line, and the shape each module has.

A benchmark module (benchmarks/<name>.py) defines:

- `TITLE`: one line saying what is compared against what;
- `FULL` and `QUICK`: its `Config` (run lengths for `make bench`, and seconds-long ones for tests);
- `run(options, config) -> dict`: measures, prints as it goes (`options.report`), returns raw figures;
- `rows(result) -> list[dict]`: the Markdown summary's rows, read back from that dict (so a summary
  can be rendered again from a JSON file): {"compared", "figures", "ratio", "goal", "value"}, where
  `goal` names an entry of benchmarks/goals.py (or None) and `value` is the figure it judges;
- optionally `notes(result) -> list[str]`: Markdown lines under its table (evidence such as trace summaries).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REAL_FRAMEWORKS = ("pytorch", "tensorflow", "jax")


@dataclass
class Options:
    task: str  # the one task of harness, trainer and noise
    tasks: list[str]  # the tasks of compile
    frameworks: list[str] | None  # None: each benchmark's own default
    report: Callable[[str], None] = print
    profile: object = None  # a profiling.BenchmarkProfile while --profile-out is on

    def real_frameworks(self) -> list[str]:
        """The frameworks asked for, minus `none` (the harness benchmark's zero-cost model)."""
        chosen = self.frameworks if self.frameworks is not None else list(REAL_FRAMEWORKS)
        return [f for f in chosen if f != "none"]

    def child_pstats(self) -> Path | None:
        """Where a child process should write its profile (None when not profiling)."""
        return self.profile.child_path() if self.profile is not None else None


def inference_rules_version(framework: str) -> str | None:
    """The rules version a benchmark serves `framework` under: None (the default version) where that names it
    for inference (and for `none`), else the newest version that does (onnxruntime: 1.2, while 1.1 is the
    default); UserError where none does."""
    from levelfield.ground.errors import UserError
    from levelfield.rules import load_suite
    from levelfield.rules.loader import available_versions, rules_root

    if framework == "none" or framework in load_suite().inference_frameworks:
        return None
    for version in reversed(available_versions(rules_root())):
        if framework in load_suite(version).inference_frameworks:
            return version
    raise UserError(f"unknown framework {framework!r}: no rules version names it for inference")


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, or None when either is missing or the denominator is 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator
