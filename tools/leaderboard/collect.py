"""Check each submission tree and load the clean ones: the leaderboard's only way into submissions.

    from levelfield.tools.leaderboard.collect import collect
    trees = collect([Path("submissions/example")])
    trees.clean        # [CleanTree]: path, the checker's report, the loaded records, the rules they follow
    trees.excluded     # [ExcludedTree]: path, rules version, the codes of its findings

A tree enters the tables only when `levelfield check` passes it (no active
finding of severity error). Every other tree is kept with its finding codes so
the page says why it is absent: a leaderboard that silently drops a submission
cannot be audited. Warnings (e.g. REP003) do not exclude; they travel with the
tree and are shown next to it. An MLCommons Inference tree is judged result by
result: a result with errors of its own is listed as excluded (its folder and
codes) and the tree's other results are ranked; errors no result owns exclude
the tree.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.ground.errors import UserError

if TYPE_CHECKING:  # annotations only: the checker and the rules are imported when a tree is checked
    from levelfield.checker.engine import Report
    from levelfield.rules.loader import Task


@dataclass
class CleanTree:
    path: str  # as the user gave it: the page names trees the way the user knows them
    rules_version: str
    submission: object  # checker.records.Submission
    suite: object  # rules.Suite of the version the tree was checked under
    warnings: dict[str, int] = field(default_factory=dict)  # code -> active findings of severity warning
    profile: str = "submission"  # the profile every run was judged against

    def task(self, task_id: str) -> Task:
        """The task's rules as the judged profile sets them (the demo's own target)."""
        return self.suite.task(task_id).for_profile(self.profile)


@dataclass
class ExcludedTree:
    path: str
    rules_version: str
    codes: dict[str, int]  # code -> active findings (errors and warnings), sorted by code


@dataclass
class MlcTree:
    """An MLCommons tree that checked clean (Inference: each ranked result has no error of its own): the
    checker's report holds its scores."""

    path: str
    report: Report
    warnings: dict[str, int] = field(default_factory=dict)


@dataclass
class Collected:
    clean: list[CleanTree] = field(default_factory=list)
    excluded: list[ExcludedTree] = field(default_factory=list)
    profile: str = "submission"
    mlcommons: list[MlcTree] = field(default_factory=list)  # Training trees
    mlcommons_inference: list[MlcTree] = field(default_factory=list)


def _code_counts(findings) -> dict[str, int]:
    return dict(sorted(Counter(f.code for f in findings).items()))


def _inference_tree_errors(report: Report) -> list:
    from levelfield.checker.mlcommons.inference import unowned_errors

    return unowned_errors(report)


# How deep below a DIR that is not itself a tree trees are looked for: round/<tree>, round/<org>/<tree>, ...
SEARCH_DEPTH = 4
NO_TREE = (
    "no submission tree in it or below it (a levelfield tree holds MANIFEST, an MLCommons Training submitter "
    "folder results/ and systems/, an MLCommons Inference tree closed/ or open/)"
)


def _folders(folder: Path) -> list[Path]:
    """The sub-folders of `folder`, by name; links and hidden folders left out (never followed)."""
    try:
        children = sorted(folder.iterdir())
    except OSError as e:
        raise UserError(f"{folder}: cannot be listed ({e.strerror})") from None
    return [c for c in children if c.is_dir() and not c.is_symlink() and not c.name.startswith(".")]


def _is_tree(folder: Path) -> bool:
    """A submission tree of a layout levelfield reads; a folder whose sub-folders hold MANIFESTs is a folder
    of levelfield trees (a round), whatever else it holds."""
    from levelfield.checker.mlcommons.layout import detect_layout
    from levelfield.ground.layout import MANIFEST

    if (folder / MANIFEST).is_file():
        return True
    if any((child / MANIFEST).is_file() for child in _folders(folder)):
        return False
    try:
        detect_layout(folder)
    except UserError:
        return False
    return True


def trees_below(folder: Path, depth: int = SEARCH_DEPTH) -> list[Path]:
    """Every submission tree below `folder`, by path, at most `depth` levels down; a tree's inside is not
    searched."""
    found = []
    for child in _folders(folder):
        if _is_tree(child):
            found.append(child)
        elif depth > 1:
            found += trees_below(child, depth - 1)
    return found


def find_trees(paths: list[Path]) -> list[Path]:
    """The trees the DIRs name: a DIR that is a submission tree as given, any other folder (a publisher's
    folder of one round) every tree below it. Refused: a DIR absent, a file, or holding no tree; a tree
    named twice (one result cannot have two rows)."""
    trees: list[Path] = []
    for path in paths:
        if not path.exists():
            raise UserError(f"{path}: submission folder not found")
        if not path.is_dir():
            raise UserError(f"{path}: expected a submission folder (holding MANIFEST), found a file")
        if _is_tree(path):
            trees.append(path)
        elif found := trees_below(path):
            trees += found
        else:
            raise UserError(
                f"{path}: {NO_TREE}", hint=f"name a tree, or a folder with trees at most {SEARCH_DEPTH} levels down"
            )
    seen: dict[str, Path] = {}
    for tree in trees:
        real = os.path.realpath(tree)
        if real in seen:
            raise UserError(f"{tree}: the same submission folder as {seen[real]}; give each tree once")
        seen[real] = tree
    return trees


def collect(
    paths: list[Path],
    *,
    rules_dir: str | None = None,
    rules_version: str | None = None,
    data_dir: str | None = None,
    profile: str = "submission",
    check: Callable[..., Report] | None = None,
    trusted_keys: list | None = None,
    mlcommons_ruleset: str | None = None,
) -> Collected:
    """Check every tree (`check` defaults to the checker's check_tree; MLCommons trees go to their own
    checkers, whatever `check` is) and load the clean ones."""
    from levelfield.checker.findings import ERROR
    from levelfield.checker.mlcommons.layout import INFERENCE, TRAINING, detect_layout

    if check is None:
        from levelfield.checker.engine import check_tree as check
    out = Collected(profile=profile)
    for path in find_trees([Path(p) for p in paths]):
        layout = detect_layout(path)
        if layout in (TRAINING, INFERENCE):
            from levelfield.checker.mlcommons.inference import check_inference_tree
            from levelfield.checker.mlcommons.training import check_training_tree

            if layout == TRAINING:
                report = check_training_tree(path, mlcommons_ruleset)
            else:
                report = check_inference_tree(path, mlcommons_ruleset)
            warnings = _code_counts([f for f in report.active if f.severity != ERROR])
            if layout == INFERENCE and report.failed and not _inference_tree_errors(report):
                # Only results have errors: each of them is left out, the rest of the tree is ranked.
                for row in report.scores:
                    if row["errors"]:
                        where = str(Path(path) / row["folder"])
                        out.excluded.append(ExcludedTree(where, report.rules_version, dict(row["errors"])))
                out.mlcommons_inference.append(MlcTree(str(path), report, warnings))
            elif report.failed:
                out.excluded.append(ExcludedTree(str(path), report.rules_version, _code_counts(report.active)))
            else:
                kept = out.mlcommons if layout == TRAINING else out.mlcommons_inference
                kept.append(MlcTree(str(path), report, warnings))
            continue
        report = check(
            path,
            rules_dir=rules_dir,
            rules_version=rules_version,
            data_dir=data_dir,
            profile=profile,
            trusted_keys=trusted_keys,
        )
        if report.failed:
            out.excluded.append(ExcludedTree(str(path), report.rules_version, _code_counts(report.active)))
            continue
        # The records the checks judged, not a second read that could see a changed tree.
        suite, submission = report.suite, report.submission
        warnings = _code_counts([f for f in report.active if f.severity != ERROR])
        out.clean.append(CleanTree(str(path), suite.version, submission, suite, warnings, profile))
    return out
