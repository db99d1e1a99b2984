"""The coded findings of MLCommons-format trees (levelfield's own trees use the registered checks).

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
