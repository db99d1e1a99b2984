"""The figures of a fuzz report as Markdown tables, for docs/reliability.md.

python -m levelfield.tools.fuzz.summary build/fuzz/report.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from levelfield.tools.fuzz.cases import HOSTILE_FIELD, TREE_CLASSES
from levelfield.tools.fuzz.mutate import APPLIES


def markdown(report: dict) -> str:
    lines = [
        f"- command: `{report['command']}`",
        f"- inputs: {report['inputs']} ({report['classes']} defect classes), wall time {report['wall_s']} s "
        f"({report['inputs_per_s']} inputs/s, {report['host']['cpus']} CPUs, Python {report['host']['python']})",
        f"- crashes (exception, CHK001, hang, exit 2): {report['crashes']}; misses: {report['misses']}; "
        f"leaks of the secret: {report['leaks']}",
        f"- checked without parse reuse: {report['full_share']['inputs']} inputs, "
        f"{report['full_share']['problems']} problems",
        f"- through the CLI in a subprocess: {report['cli_share']['runs']} runs, {report['cli_share']['problems']} "
        f"problems (exit code, traceback, secret, JSON)",
        f"- parse reuse: {report['reuse']['hits']} answers from the example's parses, {report['reuse']['misses']} "
        f"parses of damaged files; shared results changed by a check: {len(report['reuse']['problems'])}",
        f"- verdict: {'passed' if report['passed'] else 'FAILED'}",
        "",
        "| defect class | applies to | inputs | resealed | failed | clean | problems | codes reported (inputs) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for cls, row in report["by_class"].items():
        kinds = (
            "tree"
            if cls in TREE_CLASSES
            else "one field of a json or mllog file"
            if cls == HOSTILE_FIELD
            else ", ".join(k for k, classes in APPLIES.items() if cls in classes)
        )
        codes = ", ".join(f"{code} ({n})" for code, n in sorted(row["codes"].items(), key=lambda kv: -kv[1])[:5])
        lines.append(
            f"| `{cls}` | {kinds} | {row['inputs']} | {row['resealed']} | {row['failed']} | {row['clean']} "
            f"| {row['problems']} | {codes} |"
        )
    lines += ["", "| code | inputs reporting it |", "| --- | ---: |"]
    lines += [f"| {code} | {n} |" for code, n in report["codes_seen"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(json.loads(Path(sys.argv[1]).read_text())), end="")
