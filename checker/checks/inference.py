"""Inference checks: every LoadGen run against LoadGen's verdict and the rules' constraints.

A performance result is N timed LoadGen runs, one per run_<i>/ folder; an
accuracy run is one, its logs flat in its folder (`InferenceRun.loadgen_runs()`
gives either as a list). Every check here reads each of those runs'
mlperf_log_detail.txt (LoadGen's own structured log) and points its findings
at that file. result.json is the runner's summary of them and is checked
against them, never trusted (repeats.py: INF006, and INF008 the repeat count).
The settings LoadGen was asked for are checked in settings.py (INF009-INF014).
"""

from __future__ import annotations

from collections.abc import Iterator

from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground.metrics import NS_PER_MS, achieved_duration_ms, percentile_latency_ns
from levelfield.ground.submission.records import Submission


def _logs(sub, mode: str | None = None):
    """(run, LoadGen run, its detail log's values) of every LoadGen run with a detail log: each
    performance repeat (run_<i>/) and each accuracy run."""
    for run in sub.inferences:
        if mode is None or run.mode == mode:
            for loadgen in run.loadgen_runs():
                if loadgen.detail is not None:
                    yield run, loadgen, loadgen.detail.values()


def _line(loadgen, key):
    line = loadgen.detail.last(key)
    return None if line is None else line.lineno


@check("INF001", "loadgen-invalid", area="inference")
def loadgen_invalid(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: LoadGen's own verdict for a performance run (result_validity in mlperf_log_detail.txt) is
    not VALID; LoadGen's reasons are quoted. Every repeat (run_<i>/) is judged on its own: one INVALID
    repeat makes the result invalid.
    Why: an INVALID run missed LoadGen's minimum duration or query count, its latency bound or early
    stopping; its number is not a result. (MLCommons' checker lost this check in a refactor.)
    Bad: "result_validity": "INVALID" with "early stopping not met".
    Fix: follow LoadGen's reason: lower Server's target_qps (in --user-conf; otherwise the runner
    sizes it from a measurement), or run longer; never edit the log.
    """
    for _run, loadgen, values in _logs(sub, "performance"):
        validity = values.get("result_validity")
        if validity != "VALID":
            reasons = [
                key
                for key in (
                    "result_min_duration_met",
                    "result_min_queries_met",
                    "result_perf_constraints_met",
                    "early_stopping_met",
                )
                if values.get(key) is False
            ]
            said = str(values.get("result_invalid_reason") or "").strip()
            yield Finding.at(
                loadgen.detail.path,
                "LoadGen judged the run not VALID" + (f": {said}" if said else ""),
                line=_line(loadgen, "result_validity"),
                found=validity,
                expected="VALID",
                hint="failed: " + (", ".join(reasons) or "no result_validity line"),
            )


@check("INF002", "loadgen-error", area="inference")
def loadgen_error(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: LoadGen logged an error (a detail-log line with is_error true, or num_errors above 0).
    Why: LoadGen errors mean samples were answered twice, not at all, or out of bounds: the timing is
    not trustworthy even when a number was printed ("looks OK" after an error is a known MLPerf complaint).
    Bad: {"key": "error_runtime", "value": "Multiple responses for sample", "metadata": {"is_error": true}}.
    Fix: fix the SUT so every sample is answered exactly once, then re-run.
    """
    for _run, loadgen, values in _logs(sub):
        flagged = [line for line in loadgen.detail.lines if line.metadata.get("is_error") is True]
        for line in flagged:
            yield Finding.at(
                loadgen.detail.path,
                f"LoadGen error {line.key}: {str(line.value)[:200]}",
                line=line.lineno,
                hint="fix the SUT and re-run",
            )
        errors = values.get("num_errors")
        if isinstance(errors, int) and errors > 0 and not flagged:
            yield Finding.at(
                loadgen.detail.path,
                "LoadGen counted errors",
                line=_line(loadgen, "num_errors"),
                found=errors,
                expected=0,
            )


_OFFLINE_TOO_SHORT = (
    "Offline's one query was too small for this model: raise expected_qps in --user-conf "
    "(levelfield infer sizes the query again itself when a run ends early)"
)


@check("INF003", "constraint-not-met", area="inference")
def constraint_not_met(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a performance run did not meet the rules' constraints as achieved, not as configured: the
    measured duration (LoadGen's power_begin to power_end) or query count is under the submission
    profile's minimum, or the latency at the rules' percentile exceeds the rules' bound (Server).
    Every repeat (run_<i>/) must meet them.
    Why: MLCommons' checker reads the configured duration; a run cut short still shows the configured
    one. levelfield measures what happened.
    Bad: min_duration_ms 60000 configured, 12 s achieved because a max_duration_ms in --user-conf cut the run.
    Fix: run with the rules' settings and no smaller maximum; to meet Server's bound, lower its
    target_qps in --user-conf (without one the runner sizes it from a measurement).
    """
    for run, loadgen, values in _logs(sub, "performance"):
        task = ctx.task(run.task)
        rules = task.loadgen_settings(ctx.profile, run.scenario)
        duration_ms = achieved_duration_ms(values)
        if duration_ms is None:
            yield Finding.at(
                loadgen.detail.path,
                "no power_begin/power_end to measure the duration",
                expected="LoadGen 6.0.17's detail log",
            )
        elif duration_ms < rules["min_duration_ms"]:
            yield Finding.at(
                loadgen.detail.path,
                "run shorter than the rules' minimum duration",
                line=_line(loadgen, "power_end"),
                found=f"{duration_ms:.0f} ms",
                expected=f">= {rules['min_duration_ms']} ms",
                hint=_OFFLINE_TOO_SHORT if run.scenario == "offline" else None,
            )
        queries = values.get("result_query_count")
        if not isinstance(queries, int) or queries < rules["min_query_count"]:
            yield Finding.at(
                loadgen.detail.path,
                "fewer queries than the rules' minimum",
                line=_line(loadgen, "result_query_count"),
                found=queries,
                expected=f">= {rules['min_query_count']}",
            )
        if run.scenario == "server":
            latency_ns = percentile_latency_ns(values, rules["latency_percentile"])
            bound_ns = rules["latency_bound_ms"] * NS_PER_MS
            if not isinstance(latency_ns, (int, float)) or latency_ns > bound_ns:
                yield Finding.at(
                    loadgen.detail.path,
                    f"p{rules['latency_percentile'] * 100:g} latency over the rules' bound",
                    found=latency_ns,
                    expected=f"<= {bound_ns:.0f} ns",
                )


@check("INF005", "loadgen-version-not-pinned", area="inference")
def loadgen_version_not_pinned(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the LoadGen version in mlperf_log_detail.txt is not the one the rules pin (tools.loadgen.version).
    Why: LoadGen's scheduling, early stopping and percentiles change between releases; MLCommons'
    checker never verifies the version, so results from modified LoadGens go unnoticed.
    Bad: "loadgen_version": "5.1.0 @ 1a2b3c".
    Fix: pip install mlcommons-loadgen==<the pinned version> and re-run.
    """
    pinned = str(ctx.suite.tools["loadgen"]["version"])
    for _run, loadgen, values in _logs(sub):
        version = values.get("loadgen_version")
        if not isinstance(version, str) or not version.startswith(pinned + " "):
            yield Finding.at(
                loadgen.detail.path,
                "LoadGen version is not the pinned one",
                line=_line(loadgen, "loadgen_version"),
                found=version,
                expected=f"{pinned} @ <commit>",
                hint=f"pip install mlcommons-loadgen=={pinned}",
            )


def summary_validity(summary: str) -> str | None:
    """The verdict of LoadGen's human summary ("Result is : VALID"), or None without that line."""
    for line in summary.splitlines():
        label, sep, value = line.partition(":")
        if sep and label.strip() == "Result is":
            return value.strip()
    return None


@check("INF007", "summary-mismatch", area="inference")
def summary_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the verdict in mlperf_log_summary.txt ("Result is : VALID") differs from result_validity in
    mlperf_log_detail.txt, or the summary has no verdict.
    Each repeat's summary is compared with the detail log in its own run_<i>/ folder.
    Why: people read the summary, the checker reads the detail log; both come from one LoadGen run, so
    a disagreement means one of them was edited.
    Bad: a summary edited to say "Result is : VALID" next to a detail log saying INVALID.
    Fix: package LoadGen's files exactly as it wrote them.
    """
    for _run, loadgen, values in _logs(sub, "performance"):
        if loadgen.summary is None:
            continue  # STR001 / STR003
        said = summary_validity(loadgen.summary)
        if said != values.get("result_validity"):
            yield Finding.at(
                loadgen.summary_path,
                "verdict differs from mlperf_log_detail.txt",
                found=said,
                expected=values.get("result_validity"),
            )


@check("INF020", "precision-not-allowed", area="inference")
def precision_not_allowed(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: result.json's `precision` (what the framework computed in, read back from its own objects) is
    not one the task's rules allow for inference (rules 1.2: inference.precisions; else the training
    precision). A run that records none is an fp32 run of the rules before 1.2.
    Why: a bf16 figure is not an fp32 figure, and a fidelity gate holds each precision to its own
    tolerance and threshold: an unlisted precision has no gate the rules agreed to.
    Bad: "precision": "fp16" for seq-transformer-standard, whose rules allow fp32 and bf16.
    Fix: run `levelfield infer --precision` with a precision the rules list.
    """
    from levelfield.ground.fidelity import precisions

    for run in sub.inferences:
        data = run.result.data if run.result is not None else None
        if not isinstance(data, dict) or "precision" not in data:
            continue
        allowed = precisions(ctx.task(run.task))
        if data["precision"] not in allowed:
            yield Finding.at(
                run.result.path,
                "precision is not one the rules allow for this task's inference",
                found=data["precision"],
                expected=f"one of {', '.join(allowed)}",
                hint=f"rules {ctx.suite.version}, {ctx.task(run.task).path.name}: inference.precisions",
            )
