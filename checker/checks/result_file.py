"""result.json's record fields against the files they record: each must say what its source says.

The runner (levelfield/harness/result_file.py) writes result.json's identity and
bookkeeping from other files' values: framework_version is the framework's
version (the run's environment fingerprint, in result.json itself, holds it
under the framework's package; REP001 holds that to environment.json), profile,
submittable and dataset_samples come from the run's effective settings
(settings.json), loadgen_version and loadgen_errors from each LoadGen run's
detail log (for a performance run, per repeat in `runs` and over them at the
top), loadgen_version_expected is the rules' pinned LoadGen, and weights is
the --weights the run was given, one per framework's result (its accuracy and
performance runs measure one model). rules_version is RUL001's; the figures
(metric, validity, statistics) are INF006's. A field absent or of a type the
runner never writes is left to the checks of the file's shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground.parse import plain_int
from levelfield.ground.registry import FRAMEWORK_PACKAGES

if TYPE_CHECKING:
    from levelfield.checker.context import Context
    from levelfield.ground.parse import MllogFile
    from levelfield.ground.submission.records import InferenceRun, Repeat, Submission

_HINT = "never edit result.json; package the run folder as `levelfield infer` wrote it"


def flagged_errors(detail: MllogFile) -> int:
    """The detail log's lines flagged is_error: what the runner counts as loadgen_errors."""
    return sum(1 for line in detail.lines if line.metadata.get("is_error") is True)


def error_counts(detail: MllogFile) -> set[int]:
    """The error counts a detail log supports, as INF002 counts them: its flagged lines, or LoadGen's
    num_errors when no line is flagged."""
    flagged, logged = flagged_errors(detail), detail.values().get("num_errors")
    return {flagged} | ({logged} if flagged == 0 and plain_int(logged) else set())


def _framework_version(run: InferenceRun, data: dict) -> tuple[str, Any] | None:
    """(where, the framework's version the run's environment fingerprint records), or None when it
    records none. The fingerprint in result.json itself is read: REP001 holds it to environment.json."""
    environment = data.get("environment")
    if run.framework not in FRAMEWORK_PACKAGES or not isinstance(environment, dict):
        return None
    package = FRAMEWORK_PACKAGES[run.framework][0]
    packages = environment.get("packages")
    if not isinstance(packages, dict) or not isinstance(packages.get(package), str):
        return None
    return f"environment.packages.{package}", packages[package]


def _settings_expectations(run: InferenceRun, data: dict) -> Iterator[tuple[str, str, Any]]:
    """(field, source, value) of the fields result.json takes from settings.json."""
    settings = run.settings.data if run.settings is not None else None
    if not isinstance(settings, dict):
        return  # STR001 / STR003
    where = L.SETTINGS
    if isinstance(settings.get("profile"), str):
        yield "profile", f"{where} profile", settings["profile"]
    if plain_int(settings.get("dataset_samples")):
        yield "dataset_samples", f"{where} dataset_samples", settings["dataset_samples"]
    if isinstance(settings.get("submittable"), bool):
        # The runner: a performance result is submittable when its profile is and it is valid (INF006
        # holds `valid` to the logs); an accuracy run when its profile is and LoadGen logged no error.
        if run.mode == L.PERFORMANCE and isinstance(data.get("valid"), bool):
            source = f"{where} submittable and result.json valid"
            yield "submittable", source, settings["submittable"] and data["valid"]
        elif run.mode == L.ACCURACY and run.detail is not None:
            clean = flagged_errors(run.detail) == 0
            source = f"{where} submittable and no error in {L.DETAIL_LOG}"
            yield "submittable", source, settings["submittable"] and clean


def _log_name(repeat: Repeat) -> str:
    """The detail log's path from result.json's folder: run_<i>/mlperf_log_detail.txt, or beside it."""
    return L.DETAIL_LOG if repeat.index is None else f"{L.repeat_folder(repeat.index)}/{L.DETAIL_LOG}"


def _log_expectations(label: str, repeat: Repeat) -> Iterator[tuple[str, str, Any, set | None]]:
    """(field, source, value, accepted values) of a block of result.json that records one LoadGen run."""
    values = repeat.detail.values()
    if isinstance(values.get("loadgen_version"), str):
        yield f"{label}loadgen_version", f"{_log_name(repeat)} loadgen_version", values["loadgen_version"], None
    source = f"{_log_name(repeat)}'s is_error lines"
    yield f"{label}loadgen_errors", source, flagged_errors(repeat.detail), error_counts(repeat.detail)
    if label and plain_int(values.get("result_query_count")):  # a performance repeat: the queries LoadGen issued
        yield f"{label}query_count", f"{_log_name(repeat)} result_query_count", values["result_query_count"], None


def _expectations(run: InferenceRun, data: dict, ctx: Context) -> Iterator[tuple]:
    """(field path in result.json, source, expected value, accepted values or None) for one result.json."""
    recorded = _framework_version(run, data)
    if recorded is not None:
        yield "framework_version", recorded[0], recorded[1], None
    for field, source, value in _settings_expectations(run, data):
        yield field, source, value, None
    pinned = str(ctx.suite.tools["loadgen"]["version"])
    yield "loadgen_version_expected", "the rules' pinned LoadGen (tools.loadgen.version)", pinned, None
    if run.mode == L.ACCURACY:
        if run.detail is not None:
            yield from _log_expectations("", run.loadgen_runs()[0])
        return
    entries = data.get("runs") if isinstance(data.get("runs"), list) else []
    logged = [r for r in run.repeats if r.detail is not None]
    for repeat in logged:
        if 1 <= repeat.index <= len(entries) and isinstance(entries[repeat.index - 1], dict):
            yield from _log_expectations(f"runs[{repeat.index - 1}].", repeat)
    if logged and logged[0].index == 1:  # the top-level version is the first repeat's
        version = logged[0].detail.values().get("loadgen_version")
        if isinstance(version, str):
            yield "loadgen_version", f"{_log_name(logged[0])} loadgen_version", version, None
    counts = [r.detail.values().get("result_query_count") for r in logged]
    if logged and len(logged) == len(run.repeats) and all(plain_int(c) for c in counts):  # the fewest queries
        yield "query_count", "the fewest result_query_count of the repeats' detail logs", min(counts), None
    if logged and len(logged) == len(run.repeats):  # the top-level count is the sum over every repeat
        total = sum(flagged_errors(r.detail) for r in logged)
        accepted = {total, sum(max(error_counts(r.detail)) for r in logged)}
        yield "loadgen_errors", f"the is_error lines of the {len(logged)} repeats' detail logs", total, accepted


def _field(data: dict, path: str) -> Any:
    """result.json's value at "key" or "runs[i].key"; None when absent."""
    block, _, key = path.rpartition(".")
    if block:
        data = data["runs"][int(block[len("runs[") : -1])]
    return data.get(key)


def _same_type(found: Any, expected: Any) -> bool:
    if isinstance(expected, bool) or isinstance(found, bool):
        return isinstance(found, bool) and isinstance(expected, bool)
    if plain_int(expected):
        return plain_int(found)
    return isinstance(found, type(expected))


@check("INF017", "result-record-mismatch", area="inference")
def result_record_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a field result.json copies from another record says otherwise: framework_version (the version
    of the framework's package in the run's environment fingerprint, which REP001 holds to
    environment.json), profile, dataset_samples and submittable (settings.json; a performance result is
    submittable only when valid, an accuracy run only without LoadGen errors),
    loadgen_version, loadgen_errors and query_count (each LoadGen run's detail log: per repeat in `runs`,
    and at the top the first repeat's version, the sum of the errors and the fewest queries),
    loadgen_version_expected (the rules' pinned LoadGen), or weights or precision differing between the
    accuracy and the performance run of one framework, task and scenario (their label and, where recorded,
    the weights file's SHA-256; the precision, rules 1.2). Fields absent or of another type than the
    runner writes are not compared (STR010 reports them).
    Why: result.json is what a reader opens first; one edited after the run can claim a submittable
    profile, a clean LoadGen or the framework release of another run, and an accuracy run of other
    weights, or at another precision, than the timed ones proves nothing about them.
    Bad: result.json "loadgen_errors": 0 next to a detail log with an is_error line; "weights":
    "runs/a.npz" in accuracy/ and "runs/b.npz" in performance/.
    Fix: never edit result.json; package the run folders as `levelfield infer` wrote them, both modes
    run with one --weights.
    """
    weights: dict[tuple, tuple[str, dict]] = {}  # (system, task, framework, scenario) -> the accuracy run's
    for run in sub.inferences:
        data = run.result.data if run.result is not None else None
        if not isinstance(data, dict):
            continue  # STR001 / STR003
        if run.mode == L.ACCURACY:
            weights[run.key] = (run.result.path, _weights_identity(data))
        for field, source, expected, accepted in _expectations(run, data, ctx):
            found = _field(data, field)
            if found is None or not _same_type(found, expected):
                continue  # absent or of another type: the file's shape is another check's
            if found != expected and found not in (accepted or ()):
                yield Finding.at(
                    run.result.path, f"{field} differs from {source}", found=found, expected=expected, hint=_HINT
                )
    for run in sub.inferences:
        data = run.result.data if run.result is not None else None
        if run.mode != L.PERFORMANCE or not isinstance(data, dict) or run.key not in weights:
            continue
        where, used = weights[run.key]
        mine = _weights_identity(data)
        for field in sorted(mine.keys() & used.keys()):  # a field absent on either side is not compared
            if mine[field] != used[field]:
                yield Finding.at(
                    run.result.path,
                    f"{field} differs from the accuracy run's ({where})",
                    found=mine[field],
                    expected=used[field],
                    hint="measure accuracy and performance with one --weights; " + _HINT,
                )


def _weights_identity(data: dict) -> dict:
    """The model a run measured: its weights' label (`weights`) and, since levelfield records them, the
    file's SHA-256 (`weights_sha256`, null for the initial weights) and the precision it computed in
    (`precision`, rules 1.2), where present as the runner writes them."""
    identity = {}
    if isinstance(data.get("precision"), str):
        identity["precision"] = data["precision"]
    if isinstance(data.get("weights"), str):
        identity["weights"] = data["weights"]
    if "weights_sha256" in data and (data["weights_sha256"] is None or isinstance(data["weights_sha256"], str)):
        identity["weights_sha256"] = data["weights_sha256"]
    return identity
