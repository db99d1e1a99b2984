"""Reporters: findings as text for people and JSON for machines.

print(text_report(report))
print(json.dumps(json_report(report), indent=2))
"""

from __future__ import annotations

from collections import Counter

from levelfield.checker.engine import Report

JSON_FORMAT_VERSION = 1


def text_report(report: Report, *, hints: bool = True) -> str:
    lines = []
    for finding in report.findings:
        waived = f" [waived: {finding.waived}]" if finding.waived else ""
        severity = "" if finding.severity == "error" else f" [{finding.severity}]"
        lines.append(finding.text() + severity + waived)
        if hints and finding.hint and not finding.waived:
            lines.append(f"    hint: {finding.hint}")
    active = report.active
    counts = Counter(f.code for f in active)
    # Said on the verdict line itself, so a clean demo tree is never mistaken for a clean submission.
    judged = (f"rules {report.rules_version}" if report.layout == "levelfield" else report.rules_version) + (
        "" if report.profile == "submission" else f", judged as the {report.profile} profile (not results)"
    )
    if not report.findings:
        lines.append(f"{report.root}: clean: {len(report.checks_run)} checks, {judged}, no findings")
    else:
        summary = ", ".join(f"{code} x{n}" for code, n in sorted(counts.items())) or "none active"
        lines.append(
            f"{report.root}: {len(active)} finding(s) ({summary}); "
            f"{len(report.findings) - len(active)} waived; {len(report.checks_run)} checks, {judged}"
        )
    if report.scores:
        table = inference_scores_table if report.layout == "mlcommons-inference" else scores_table
        lines[:0] = [table(report.scores), ""]
    return "\n".join(lines)


def scores_table(scores: list[dict]) -> str:
    """An MLCommons Training tree's scores, one row per (submitter, system, benchmark), as MLCommons publishes them."""
    from tabulate import tabulate

    rows = [
        [
            s["submitter"],
            s["system"],
            s["benchmark"],
            s["runs"],
            s["failed_runs"],
            f"{s['scaling_factor']:.6g}",
            "-" if s["rcp"] is None else ("pass" if s["rcp"]["passed"] else "fail") + f" ({s['rcp']['message']})",
            "-" if s["score_min"] is None else f"{s['score_min']:.4f}",
        ]
        for s in scores
    ]
    headers = ["submitter", "system", "benchmark", "runs", "failed", "scaling", "RCP", "score min"]
    return tabulate(rows, headers=headers, tablefmt="github")


def inference_scores_table(scores: list[dict]) -> str:
    """An MLCommons Inference tree's results, one row per (division, submitter, system, model, scenario)."""
    from tabulate import tabulate

    rows = [
        [
            s["division"] or "-",
            s["submitter"],
            s["system"],
            s["model"],
            s["scenario"],
            "-" if s["value"] is None else f"{s['value']:.6g} {s['metric']}",
            s["validity"] or "-",
            "-" if s["accuracy"] is None else f"{s['accuracy']['name']} {s['accuracy']['value']:g}",
            " ".join(f"{test}:{verdict or '?'}" for test, verdict in s["compliance"].items()) or "-",
            s["loadgen_version"] or "-",
        ]
        for s in scores
    ]
    headers = ["division", "submitter", "system", "model", "scenario", "metric", "result", "accuracy", "compliance"]
    return tabulate(rows, headers=headers + ["LoadGen"], tablefmt="github")


def json_report(report: Report) -> dict:
    return {
        "format_version": JSON_FORMAT_VERSION,
        "root": report.root,
        "rules_version": report.rules_version,
        "profile": report.profile,
        "checks_run": report.checks_run,
        "passed": not report.failed,
        "findings": [f.as_dict() for f in report.findings],
        **({"layout": report.layout, "scores": report.scores} if report.layout != "levelfield" else {}),
    }
