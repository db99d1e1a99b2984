"""Reproducibility checks: one software environment and the rules' dataset behind every run of a result."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from levelfield.checker.checks.training import training_results
from levelfield.checker.context import Context
from levelfield.checker.findings import WARNING, Finding, check
from levelfield.ground import mllog_keys as LK
from levelfield.ground.environment import digested_fields
from levelfield.ground.submission.records import Submission


def environment_records(sub: Submission) -> Iterator[tuple[tuple[str, str, str], str, int | None, Any]]:
    """(result key, path, line, environment) of every environment a log or result.json recorded."""
    for training in training_results(sub):
        for log in training.logs:
            line = log.first(LK.ENVIRONMENT)
            if line is not None:
                yield (training.system, training.task, training.framework), log.path, line.lineno, line.value
    for run in sub.inferences:
        if run.result is not None and isinstance(run.result.data, dict):
            yield (run.system, run.task, run.framework), run.result.path, None, run.result.data.get("environment")


def _compared(environment: Any) -> dict | None:
    """What REP001 compares of an environment record: the fields its digest covers, and the digest it
    states (an edit that leaves the digest alone still changes a field). None for a record that is not
    an object."""
    if not isinstance(environment, dict):
        return None
    return digested_fields(environment) | {"digest": environment.get("digest")}


def _differing(found: dict, expected: dict) -> list[str]:
    def text(value):  # as JSON text: 1, 1.0 and true are three different recorded values
        return json.dumps(value, sort_keys=True, default=str)

    return sorted(key for key in found.keys() | expected.keys() if text(found.get(key)) != text(expected.get(key)))


@check("REP001", "mixed-environment", area="reproducibility")
def mixed_environment(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a run's environment fingerprint (Python, framework and library versions, levelfield version
    and commit, and the digest over them) differs from the result's environment.json in any field the
    digest covers. Whether the checkout was modified (levelfield_git's dirty flag and files) is not
    compared: it may change between runs of one commit, and REP003 judges it.
    Why: a result is one software stack; runs mixed from two framework versions measure neither. The
    fields are compared, not only the digest, so a field edited without its digest is seen too.
    Bad: four runs under torch 2.13.0 and one under torch 2.12.1; or environment.json's "python" edited
    while its digest was left alone.
    Fix: re-run every run of the result in one environment; package environment.json as
    `levelfield package` wrote it.
    """
    for key, path, line, environment in environment_records(sub):
        captured = sub.environments.get(key)
        if captured is None or not isinstance(captured.data, dict):
            continue  # STR001 / STR003
        found, expected = _compared(environment), _compared(captured.data)
        if found is None:
            yield Finding.at(
                path,
                f"environment is not an object like {captured.path}",
                line=line,
                found=environment,
                expected=expected,
                hint="compare the two with `diff`; re-run in one environment",
            )
            continue
        differing = _differing(found, expected)
        if differing:
            yield Finding.at(
                path,
                f"environment differs from {captured.path}: {', '.join(differing)}",
                line=line,
                found={name: found.get(name) for name in differing},
                expected={name: expected.get(name) for name in differing},
                hint="compare the two with `diff`; re-run in one environment",
            )


@check("REP002", "dataset-digest-mismatch", area="reproducibility")
def dataset_digest_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the dataset digest a training log recorded differs from the SHA-256 the rules pin.
    Why: a result on other data (a re-shuffled, filtered or regenerated set) is not comparable.
    Bad: levelfield_dataset_digest {"train-images-idx3-ubyte.gz": "ab12..."} against the rules' "b056...".
    Fix: use the dataset the rules name (`levelfield data verify`).
    """
    from levelfield.reference.datasets import expected_digests

    for training in training_results(sub):
        want = expected_digests(ctx.task(training.task))
        for log in training.logs:
            line = log.first(LK.DATASET_DIGEST)
            if line is not None and line.value != want:
                yield Finding.at(
                    log.path,
                    "dataset digest differs from the rules",
                    line=line.lineno,
                    found=line.value,
                    expected=want,
                    hint="check the data with `levelfield data verify`",
                )


@check("REP003", "modified-reference-code", area="reproducibility", severity=WARNING)
def modified_reference_code(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: closed division: a run recorded that levelfield's tracked files were modified (git dirty).
    Why: the closed division runs the reference code as released; a local change may change the recipe.
    Unlike MLPerf's checker, which fails on any changed file, this lists the files and warns, so an
    auditor can judge whether they matter.
    Bad: levelfield_git {"dirty": true, "dirty_files": ["reference/ctr_dlrm/jax/model.py"]}.
    Fix: run from a clean checkout of a released commit.
    """
    if sub.division != "closed":
        return
    reported = set()
    for key, path, line, environment in environment_records(sub):
        git = environment.get(LK.GIT) if isinstance(environment, dict) else None
        if isinstance(git, dict) and git.get("dirty") and key not in reported:
            reported.add(key)
            yield Finding.at(
                path,
                "runs used a modified levelfield checkout",
                line=line,
                found=git.get("dirty_files"),
                expected="a clean checkout",
            )
