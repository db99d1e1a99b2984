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
    judged = f"rules {report.rules_version}" + (
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
    return "\n".join(lines)


def json_report(report: Report) -> dict:
    return {
        "format_version": JSON_FORMAT_VERSION,
        "root": report.root,
        "rules_version": report.rules_version,
        "profile": report.profile,
        "checks_run": report.checks_run,
        "passed": not report.failed,
        "findings": [f.as_dict() for f in report.findings],
    }
