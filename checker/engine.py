"""Run the registered checks over a submission tree and collect findings.

    from levelfield.checker.engine import check_tree
    report = check_tree(Path("submissions/example"))
    report.failed            # True when an unwaived error-severity finding remains
    for f in report.findings: print(f.text())

Order: read the tree (bounded, no links followed), pick the rules version the
submission declares (or the one asked for), load the records, run every
selected check. A check that raises does not stop the others and is never a
silent pass: it becomes a CHK001 internal-error finding naming the check.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.checker.context import SUBMISSION_PROFILE, Context
from levelfield.checker.findings import ERROR, REGISTRY, RETIRED, Finding
from levelfield.ground.errors import UserError

if TYPE_CHECKING:
    from levelfield.ground.signing import PublicKey
    from levelfield.ground.submission.records import Submission

INTERNAL_ERROR = "CHK001"


@dataclass
class Waiver:
    code: str
    reason: str
    path: str | None = None

    def covers(self, finding: Finding) -> bool:
        return finding.code == self.code and (self.path is None or finding.path.startswith(self.path))


@dataclass
class Report:
    root: str
    rules_version: str
    checks_run: list[str]
    profile: str = SUBMISSION_PROFILE
    findings: list[Finding] = field(default_factory=list)  # every finding, waived ones marked
    # What was checked, for tools that build on a verdict (the leaderboard): the records the checks
    # saw and the rules they were judged by, so nothing is read a second time after the check.
    submission: object = field(default=None, repr=False)
    suite: object = field(default=None, repr=False)
    # MLCommons trees (checker/mlcommons/): which layout was read, and the scores computed from it.
    layout: str = "levelfield"
    scores: list = field(default_factory=list)

    @property
    def active(self) -> list[Finding]:
        return [f for f in self.findings if f.waived is None]

    @property
    def failed(self) -> bool:
        return any(f.severity == ERROR for f in self.active)


def load_waivers(path: Path) -> list[Waiver]:
    from levelfield.ground.validation import load_document, validate

    data = load_document(path)
    validate(data, "waivers", path)
    for w in data["waivers"]:
        refuse_retired(w["code"], f"{path}: waiver")
    return [Waiver(w["code"], w["reason"], w.get("path")) for w in data["waivers"]]


def refuse_retired(code: str, where: str) -> None:
    """UserError naming the replacements when `code` is retired: it would silently match nothing."""
    retired = RETIRED.get(code)
    if retired is not None:
        replaced = ", ".join(retired.replaced_by) or "no check"
        raise UserError(
            f"{where} {code}: code retired ({retired.name}, {retired.retired}); "
            f"it is checked now by {replaced} (docs/checks.md, Retired codes)"
        )


def selected_codes(select: list[str], ignore: list[str]) -> list[str]:
    """Codes to run: those matching a --select prefix (all when none), minus --ignore prefixes."""
    _import_checks()
    for option, prefixes in (("--select", select), ("--ignore", ignore)):
        for prefix in prefixes:
            refuse_retired(prefix, option)
            if not any(code.startswith(prefix) for code in REGISTRY):
                raise UserError(
                    f"{option} {prefix}: matches no check code (codes look like TRN006; "
                    f"areas: {', '.join(sorted({c[:3] for c in REGISTRY}))})"
                )
    codes = [c for c in sorted(REGISTRY) if not select or any(c.startswith(p) for p in select)]
    return [c for c in codes if not any(c.startswith(p) for p in ignore)]


def _import_checks() -> None:
    import levelfield.checker.checks  # noqa: F401 - registers every check


def check_tree(
    root: Path,
    *,
    rules_dir: str | None = None,
    rules_version: str | None = None,
    select: list[str] = (),
    ignore: list[str] = (),
    waivers: list[Waiver] = (),
    data_dir: str | None = None,
    profile: str = SUBMISSION_PROFILE,
    trusted_keys: list[PublicKey] | None = None,
) -> Report:
    from levelfield.ground.submission.loader import declared_rules_version, load_submission
    from levelfield.ground.submission.tree import read_tree
    from levelfield.rules import load_suite

    codes = selected_codes(list(select), list(ignore))
    tree = read_tree(root)
    version = rules_version or declared_rules_version(tree)
    try:
        suite = load_suite(version, rules_dir)
    except UserError:
        if rules_version is not None:
            raise
        suite = load_suite(None, rules_dir)  # an unknown declared version is itself a finding (RUL001)
    suite.check_id("profile", profile)
    submission = load_submission(tree, suite)
    context = Context(suite, data_dir, profile, trusted_keys)
    report = Report(str(root), suite.version, codes, profile, submission=submission, suite=suite)
    for code in codes:
        report.findings.extend(run_check(code, submission, context))
    for finding in report.findings:
        finding.waived = next((w.reason for w in waivers if w.covers(finding)), None)
    report.findings.sort(key=Finding.sort_key)
    return report


def run_check(code: str, submission: Submission, context: Context) -> list[Finding]:
    registered = REGISTRY[code]
    try:
        findings = list(registered.func(submission, context))
    except UserError as error:  # e.g. the dataset needed to re-score is not on this machine
        raise UserError(f"check {code} {registered.name} could not run: {error}", hint=error.hint) from None
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        internal = REGISTRY[INTERNAL_ERROR]
        return [
            Finding(
                path=".",
                message=f"check {code} {registered.name} crashed: {type(error).__name__}: "
                f"{str(error)[:200]} (at {Path(where.filename).name}:{where.lineno})",
                hint="a levelfield bug: please report it with this message; the check's verdict is "
                "unknown, so the submission cannot pass until it is fixed",
                code=INTERNAL_ERROR,
                name=internal.name,
                severity=ERROR,
            )
        ]
    for finding in findings:
        finding.code, finding.name, finding.severity = code, registered.name, registered.severity
        finding.hint = finding.hint or registered.doc_section("Fix:")  # every finding says how to fix it
    return findings
