"""Rules-version checks: the submission names one rules version, and every file was produced under it."""

from __future__ import annotations

from collections.abc import Iterator

from levelfield.checker.checks.training import training_results
from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground import mllog_keys as LK
from levelfield.ground.submission.records import Submission

CODE_REF_KEYS = (LK.VERSION, "git_commit", "rules_version")


@check("RUL001", "rules-version-mismatch", area="rules")
def rules_version_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the rules version in code/levelfield.json is not the one the checker applied (unknown to this
    levelfield, or overridden with --rules-version), or a log, result.json or settings.json was produced
    under another rules version.
    Why: targets, run counts and durations change between rules versions; a result is judged by the
    rules it was produced under, and all of its files must agree on which.
    Bad: code/levelfield.json says "1.0", a training log says levelfield_rules_version "0.9".
    Fix: produce every run with one levelfield release; check with the matching release.
    """
    version = ctx.suite.version
    ref = sub.code_ref.data if sub.code_ref is not None and isinstance(sub.code_ref.data, dict) else None
    if ref is not None and ref.get("rules_version") != version:
        yield Finding.at(
            sub.code_ref.path,
            "declared rules version is not the one applied",
            found=ref.get("rules_version"),
            expected=version,
            hint="check with a levelfield release that ships this rules version",
        )
    for training in training_results(sub):
        for log in training.logs:
            line = log.first(LK.RULES_VERSION)
            if line is not None and line.value != version:
                yield Finding.at(
                    log.path,
                    "produced under another rules version",
                    line=line.lineno,
                    found=line.value,
                    expected=version,
                )
    for run in sub.inferences:
        for file in (run.result, run.settings):
            if file is not None and isinstance(file.data, dict) and file.data.get("rules_version") != version:
                yield Finding.at(
                    file.path,
                    "produced under another rules version",
                    found=file.data.get("rules_version"),
                    expected=version,
                )


@check("RUL002", "invalid-code-reference", area="rules")
def invalid_code_reference(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: code/levelfield.json is not an object with levelfield_version, git_commit and rules_version
    strings (git_commit may be null outside a git checkout).
    Why: the code reference is how an auditor finds the exact code that produced the results.
    Bad: {"rules_version": "1.0"} without the commit.
    Fix: let `levelfield package` write it.
    """
    if sub.code_ref is None or sub.code_ref.data is None:
        return  # STR001 / STR003
    ref = sub.code_ref.data
    if not isinstance(ref, dict):
        yield Finding.at(sub.code_ref.path, "not a JSON object", found=type(ref).__name__, expected="object")
        return
    for key in CODE_REF_KEYS:
        value = ref.get(key)
        if not (isinstance(value, str) and value) and not (key == "git_commit" and key in ref and value is None):
            yield Finding.at(
                sub.code_ref.path,
                f"{key} missing or not a string",
                found=value,
                expected="a non-empty string",
                hint="re-run `levelfield package`",
            )
