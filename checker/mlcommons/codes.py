"""The coded findings of MLCommons-format trees (levelfield's own trees use the registered checks).

MLT codes: MLCommons Training trees (training.py); MLI codes: MLCommons Inference trees (inference.py).

Each code has a name that states the problem, a severity and a doc (What, Why, Bad, Fix) that
docs/checks.md prints. `finding(code, path, message, ...)` builds a Finding carrying them.
"""

from __future__ import annotations

from dataclasses import dataclass

from levelfield.checker.findings import ERROR, WARNING, Finding


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    severity: str
    doc: str


CODES = {
    c.code: c
    for c in (
        Code(
            "MLT001",
            "unreadable-log-line",
            ERROR,
            "What: a line of an MLCommons training log that holds `:::MLLOG` but is not a readable MLLOG entry "
            "(broken JSON, no key, a time that is not a number). Why: mlperf_logging rejects the log for it, "
            'so the run is dropped from the score. Bad: `:::MLLOG {"key": "run_st`. Fix: the submitter '
            "publishes the log as the run wrote it.",
        ),
        Code(
            "MLT002",
            "interleaved-log-line",
            WARNING,
            "What: another process's output precedes `:::MLLOG` on one line (raw stdout of a multi-process "
            "run). The MLLOG part is read, as mlperf_logging reads it. Why: the line is readable, but its "
            "event may have been cut or reordered by the interleaving. Bad: `[:::MLLOG {...}` in Dell's "
            "resnet result_4.txt of Training v4.0. Fix: log MLLOG lines from one process, or to a file of "
            "their own.",
        ),
        Code(
            "MLT003",
            "run-not-successful",
            WARNING,
            "What: a run whose log ends without `run_stop`, or with a status other than success. Why: the "
            "run says it did not reach the quality target. MLCommons' result summarizer drops a run only "
            "when mlperf_logging's compliance check rejects its log (MLT004; for resnet, a last eval below "
            "the target), so the score follows that check, and this says what the log itself claims. Bad: "
            "`run_stop` with status aborted. Fix: nothing, when the other runs suffice; otherwise run again.",
        ),
        Code(
            "MLT004",
            "compliance-failed",
            WARNING,
            "What: mlperf_logging's compliance checker, with its rules for the ruleset and the benchmark, "
            "rejects the log; its messages are quoted. Why: MLCommons' result summarizer drops such a run "
            "from the score, as a failed run; MLT006 reports a result with more failed runs than the "
            "scoring may drop. Bad: an eval_accuracy below the target at run_stop. Fix: follow the "
            "messages; MLCommons' training rules explain each.",
        ),
        Code(
            "MLT005",
            "rcp-failed",
            ERROR,
            "What: mlperf_logging's reference-convergence check (its RCP data for the ruleset) fails for a "
            "benchmark's runs, or finds no RCP for their batch size. Why: a result converging faster than "
            "the reference runs allow, or at a batch size without references, is not accepted as is. Bad: "
            "mean epochs to converge below the RCP minimum. Fix: as the message says (submit RCPs for the "
            "batch size, or runs that converge as the references do).",
        ),
        Code(
            "MLT006",
            "too-many-failed-runs",
            ERROR,
            "What: more runs of a benchmark failed (MLT003, MLT004) than MLCommons' olympic scoring may drop, "
            "or fewer runs than the benchmark requires. Why: the score would average runs the rules do not "
            "count; the result summarizer marks such a score as not correct. Bad: 2 of 5 resnet runs failed. "
            "Fix: submit the required number of converged runs.",
        ),
        Code(
            "MLT007",
            "system-description-missing",
            ERROR,
            "What: a system with results has no systems/<system>.json, or it is not a readable JSON object. "
            "Why: a score is published with its system's description; without one it names no hardware. "
            "Bad: results/box/resnet/ without systems/box.json. Fix: add the description.",
        ),
        Code(
            "MLT008",
            "scaling-differs-from-rcp",
            WARNING,
            "What: a benchmark folder's scaling.json holds another factor than mlperf_logging's RCP check "
            "computes from the runs. Why: the score is multiplied by scaling.json's factor (as MLCommons' "
            "result summarizer does); a factor the RCPs do not give changes the published score. Bad: "
            "scaling_factor 0.9 where the RCP check gives 1.0042. Fix: remove scaling.json and let the "
            "review tooling write it.",
        ),
        Code(
            "MLT009",
            "system-description-rejected",
            WARNING,
            "What: mlperf_logging's system-description checker for the ruleset rejects a systems/<system>.json "
            "(a field of its field list missing, or a value it does not accept); its message is quoted. Why: "
            "the description is what a reader compares systems by. A warning: the peer's 4.0.0 rules reject "
            "the status values (onprem, available) that MLCommons itself published in Training v4.0. Bad: no "
            "host_storage_type. Fix: as the message says.",
        ),
        Code(
            "MLI001",
            "unreadable-inference-file",
            ERROR,
            "What: a file of an MLCommons Inference tree that cannot be read as what its name says: not UTF-8, "
            "a broken MLLOG line in a LoadGen detail log, a summary without its Scenario, metric or 'Result "
            "is' line, an accuracy.txt without its metric or hash, an mlperf_log_accuracy.json that is neither "
            "JSON nor MLCommons' published truncation of it, a verify_*.txt without TEST PASS or TEST FAIL, or "
            "a file the bounded reader refused (a link, too large). Why: what it should state cannot be checked, "
            'so the result cannot be accepted as is. Bad: `:::MLLOG {"key": "result_validity` cut short. '
            "Fix: publish the file as LoadGen or the accuracy script wrote it.",
        ),
        Code(
            "MLI002",
            "inference-file-missing",
            ERROR,
            "What: a scenario folder without a file MLCommons' layout requires: performance/run_1/ without "
            "mlperf_log_summary.txt or mlperf_log_detail.txt, accuracy/ without accuracy.txt or "
            "mlperf_log_accuracy.json, a scenario without performance/ or accuracy/, a compliance TEST folder "
            "without its verify_*.txt. Why: the result (or its compliance test) has nothing to be judged by. "
            "Bad: results/box/resnet50/Offline/ holding only performance/. Fix: add the files the run wrote.",
        ),
        Code(
            "MLI003",
            "result-invalid",
            ERROR,
            "What: LoadGen judged a performance run INVALID (its detail log's result_validity); LoadGen's "
            "reasons are quoted (minimum duration or query count not met, early stopping not met, latency "
            "constraint not met). Why: MLCommons' submission checker rejects an INVALID performance result; "
            "no score is published from it. Bad: `Result is : INVALID` with `Min duration satisfied : No`. "
            "Fix: run again with settings LoadGen accepts (a lower target_qps, a longer run).",
        ),
        Code(
            "MLI004",
            "summary-disagrees-with-detail",
            ERROR,
            "What: a LoadGen summary states another metric, percentile or validity than the detail log of the "
            "same run, beyond the precision either file prints (the detail log prints doubles with 6 "
            "significant digits). Why: LoadGen writes both files from one run; a difference means one was "
            "edited or copied from another run, and the published score is read from them. Bad: `Samples per "
            "second: 757000` beside result_samples_per_second 756960. Fix: publish both files of one run, "
            "unedited.",
        ),
        Code(
            "MLI005",
            "settings-below-rules",
            ERROR,
            "What: a performance run's effective settings, as its LoadGen detail log records them "
            "(effective_min_duration_ms, effective_min_query_count, Offline's effective_min_sample_count), "
            "are below the minimums of MLCommons' mlperf.conf for the scenario and model "
            "(rules/mlcommons/inference.yaml). Why: LoadGen judges VALID against the settings it was "
            "given, so a run shortened through user.conf can be VALID and still not follow the rules. Bad: "
            "effective_min_duration_ms 60000 for Offline, where the rules ask 600000. Fix: do not lower the "
            "minimums in user.conf; run again.",
        ),
        Code(
            "MLI006",
            "mixed-loadgen-versions",
            WARNING,
            "What: the LoadGen detail logs of one submission (one submitter folder) name more than one LoadGen "
            "version; the finding lists each version and the scenario folders that used it. Why: results of "
            "one submission are compared with each other as if measured by one harness; LoadGen's scheduling "
            "and early-stopping code changes between versions. A warning: MLCommons accepted such "
            "submissions (NVIDIA's Inference v4.1 resnet50 mixes 4.0 and 4.1). Bad: Offline logs by "
            "`4.0 @ 4a77003610`, Server logs by `4.1 @ c83565d85d`. Fix: rerun the older scenarios with the "
            "round's LoadGen.",
        ),
        Code(
            "MLI007",
            "compliance-test-failed",
            ERROR,
            "What: a compliance test's verify_accuracy.txt or verify_performance.txt (TEST01, TEST04, TEST05) "
            "ends in TEST FAIL; the file's line is given. Why: the compliance tests show that the result is "
            "not cached, not tuned to the fixed seeds and that logged accuracy matches what was computed; a "
            "failed one puts the result in doubt. Bad: TEST04's `TEST FAIL` when the test score is far above "
            "the reference score. Fix: find why the test fails (caching, seed tuning) and run it again.",
        ),
        Code(
            "MLI008",
            "inference-system-description-missing",
            ERROR,
            "What: a system with results has no systems/<system>.json, or it is not a readable JSON object. "
            "Why: a score is published with its system's description; without one it names no hardware. "
            "Bad: results/box/resnet50/ without systems/box.json. Fix: add the description.",
        ),
        Code(
            "MLI009",
            "loadgen-error-logged",
            ERROR,
            "What: an entry of a performance run's LoadGen detail log that LoadGen itself marked as an error "
            '(`"is_error": true` in its metadata, counted in the summary\'s `N errors encountered`); its '
            "value is quoted with its line. Why: LoadGen logs an error when the run went wrong in a way its "
            "validity does not capture (a response for an unknown sample, a setting it could not apply); a "
            "result with errors is not clean. Bad: `Loadgen built with uncommitted changes!`. Fix: remove the "
            "cause LoadGen names and run again.",
        ),
        Code(
            "MLI010",
            "accuracy-below-target",
            ERROR,
            "What: a result's accuracy.txt, read as the round's MLCommons submission checker reads it (its regular "
            "expression per metric, line by line), misses a bound the round sets for the benchmark "
            "(rules/mlcommons/inference_vX.Y.yaml): a metric below reference x fraction (99% or 99.9% of the "
            "reference), above an upper limit, or not stated at all. Why: the checker rejects such a result; the "
            "published accuracy logs are truncated, so the figure in accuracy.txt is what it judges. Bad: "
            "`accuracy=75.1%` for resnet in v4.1, where 76.46 x 0.99 = 75.6954 is the minimum. Fix: rerun the "
            "accuracy run with the model and settings of the performance run, or submit to the open division.",
        ),
        Code(
            "MLI011",
            "unknown-benchmark-or-scenario",
            ERROR,
            "What: a results/<system>/<benchmark>/<scenario>/ folder the round's submission checker does not know: "
            "a benchmark that is neither one of the round's models nor mapped to one (the round's model_mapping, "
            "or the submitter's model_mapping.json), a scenario folder the round does not have, or a run LoadGen "
            "logged as another scenario than its folder's (an Interactive folder holds a Server run). The finding "
            "names what the round allows; the rest of the tree is judged as usual. Why: the round has no rule "
            "for such a result, so it has no official figure. Bad: results/box/resnet50/Interactive/ in v4.1, "
            "which knows SingleStream, MultiStream, Server and Offline. Fix: name the folder as the round does, "
            "or check the tree against its own round (--mlcommons-ruleset).",
        ),
        Code(
            "MLI012",
            "round-not-covered",
            ERROR,
            "What: the MLPerf Inference round of the tree is not one levelfield holds rules for, or cannot be "
            "told: no --mlcommons-ruleset, no folder named inference_results_vX.Y in the path and no LoadGen "
            "version in any detail log. Why: which key holds a result's figure, and which accuracy it needs, "
            "change from round to round; without the round no figure is official. Bad: inference_results_v3.1 "
            "(levelfield holds v4.0 to v6.0). Fix: give the round with --mlcommons-ruleset, or add the round's "
            "rules file transcribed from its checker.",
        ),
    )
}


def finding(
    code: str,
    path: str,
    message: str,
    *,
    line: int | None = None,
    found: object = None,
    expected: object = None,
    hint: str | None = None,
) -> Finding:
    spec = CODES[code]
    made = Finding.at(path, message, line=line, found=found, expected=expected, hint=hint)
    made.code, made.name, made.severity = spec.code, spec.name, spec.severity
    return made
