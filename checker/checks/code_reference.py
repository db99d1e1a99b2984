"""The code reference against the runs: code/levelfield.json must name the levelfield the runs recorded.

`levelfield package` writes code/levelfield.json from the runs: git_commit is
the one commit every run's environment fingerprint recorded (levelfield_git.commit),
levelfield_version the one levelfield version they recorded (`levelfield`).
Each training log (levelfield_environment), each environment.json and each
result.json (`environment`) records both, so an auditor can hold the code
reference to them. RUL002 checks its shape, RUL001 its rules version.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from levelfield.checker.checks.reproducibility import environment_records
from levelfield.checker.findings import Finding, check
from levelfield.ground import mllog_keys as LK

if TYPE_CHECKING:
    from levelfield.checker.context import Context
    from levelfield.ground.submission.records import Submission

_ABSENT = object()  # the record holds no such field: nothing to compare


def _commit(environment: dict) -> object:
    git = environment.get(LK.GIT)
    return git.get("commit", _ABSENT) if isinstance(git, dict) else _ABSENT


# code/levelfield.json key -> the same value in an environment fingerprint
_RECORDED = {
    LK.VERSION: lambda environment: environment.get("levelfield", _ABSENT),
    "git_commit": _commit,
}


def _recorded(sub: Submission) -> Iterator[tuple[str, object]]:
    """(path[:line], environment) of every environment fingerprint in the tree, in a stable order."""
    for _key, path, line, environment in environment_records(sub):
        yield (f"{path}:{line}" if line else path), environment
    for _key, file in sorted(sub.environments.items()):
        yield file.path, file.data


@check("RUL003", "code-reference-mismatch", area="rules")
def code_reference_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: code/levelfield.json's levelfield_version or git_commit differs from the levelfield version
    or git commit the runs recorded in their environment fingerprints (training logs'
    levelfield_environment, environment.json, result.json's environment). One finding per value recorded
    that differs, naming the first file that records it.
    Why: the code reference is how an auditor finds the code that produced the results; one edited
    after packaging points at other code than the runs used.
    Bad: code/levelfield.json says git_commit "1234..." where every run recorded levelfield_git.commit "3ba7...".
    Fix: never edit code/levelfield.json; let `levelfield package` write it from the runs.
    """
    ref = sub.code_ref.data if sub.code_ref is not None else None
    if not isinstance(ref, dict):
        return  # STR001 / STR003 / RUL002
    for key, read in _RECORDED.items():
        if not (isinstance(ref.get(key), str) and ref[key]) and not (key == "git_commit" and ref.get(key, 0) is None):
            continue  # absent or not what the packager writes: RUL002's
        # each value recorded that differs -> (the first file recording it, how many records hold it)
        differing: dict[str | None, tuple[str, int]] = {}
        for where, environment in _recorded(sub):
            value = read(environment) if isinstance(environment, dict) else _ABSENT
            if value is _ABSENT or not isinstance(value, (str, type(None))) or value == ref[key]:
                continue  # not recorded, or not what a fingerprint holds: REP001 compares the records
            first, count = differing.get(value, (where, 0))
            differing[value] = (first, count + 1)
        for value, (where, count) in differing.items():
            others = f" and {count - 1} other records" if count > 1 else ""
            yield Finding.at(
                sub.code_ref.path,
                f"{key} differs from what the runs recorded ({where}{others})",
                found=ref[key],
                expected=value,
                hint="package the runs with `levelfield package`; never edit code/levelfield.json",
            )
