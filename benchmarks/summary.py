"""Render a benchmark result (the JSON `python -m benchmarks` writes) as a Markdown summary.

    python -m benchmarks.summary benchmarks/results/2026-11-22-vm.json            # writes ...-vm.md next to it
    python -m benchmarks.summary benchmarks/results/2026-11-22-vm.json --stdout   # prints it instead

The JSON is the source; this is a view of it. One table per benchmark: what
is compared, the raw figures, the ratio, the goal and whether it was met. Each
benchmark module's `rows()` reads its own part of the JSON back; goals are
judged with the copy of benchmarks/goals.py stored in the JSON (the goals of
the run's day). A profiled run (`--profile-out`) adds the 20 most expensive
calls by cumulative time under each benchmark's table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.catalog import BENCHMARKS, module
from benchmarks.goals import met


def render(document: dict, source_name: str | None = None) -> str:
    """The Markdown summary of one result document."""
    context = document["context"]
    goals = document.get("goals", {})
    load = context.get("load_average_at_start")
    machine = (
        f"levelfield {context['levelfield']}, Python {context['python']}, {context['machine']}, "
        f"{context['cpu_count']} CPUs; load average at the start "
        f"{' / '.join(f'{v:.1f}' for v in load) if load else 'unknown'}; "
        f"{document.get('elapsed_s', 0):.0f} s in all."
    )
    lines = [f"# levelfield benchmarks, {context['date']} on {context['host']}", "", machine, ""]
    if document.get("quick"):
        lines += ["**Quick run**: tiny run lengths that check the code; the figures say nothing about the machine.", ""]
    if source_name:
        lines += [f"Rendered from `{source_name}` (the JSON holds every raw figure).", ""]
    for name, result in document["benchmarks"].items():
        lines += _section(name, result, goals)
        profile = document.get("profiles", {}).get(name)
        if profile:
            lines += _profile(profile)
    return "\n".join(lines).rstrip() + "\n"


def _section(name: str, result: dict, goals: dict) -> list[str]:
    known = name in BENCHMARKS
    bench = module(name) if known else None
    lines = [f"## {name}", "", bench.TITLE if known else "(a benchmark this version does not know)", ""]
    if not known:
        return lines
    lines += ["| what is compared | raw figures | ratio | goal | met |", "| --- | --- | --- | --- | --- |"]
    for row in bench.rows(result):
        goal = goals.get(row["goal"]) if row["goal"] else None
        verdict = met(goal, row["value"])
        cells = [
            row["compared"],
            row["figures"],
            row.get("ratio_text") or _ratio(row["ratio"]),
            goal["text"] if goal else "none set",
            {True: "yes", False: "**no**", None: "-"}[verdict],
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines.append("")
    notes = getattr(bench, "notes", None)  # optional: evidence under the table (the step benchmark's traces)
    return lines + (notes(result) if notes else [])


def _profile(profile: dict) -> list[str]:
    lines = []
    parts = [("this process", profile["pstats"], profile["top_cumulative"])]
    if profile.get("children_pstats"):
        parts.append(
            (
                f"{profile['child_processes']} child process(es), merged",
                profile["children_pstats"],
                profile["children_top_cumulative"],
            )
        )
    for label, path, table in parts:
        heading = f"Profile of {label} (cProfile: `{path}`), the largest cumulative times:"
        lines += [heading, "", "```text", *table.splitlines(), "```", ""]
    return lines


def _ratio(value) -> str:
    return "-" if value is None else f"x{value:.3f}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.summary", description=__doc__.split("\n\n")[0])
    parser.add_argument("json", type=Path, help="a result file written by python -m benchmarks")
    parser.add_argument("--stdout", action="store_true", help="print the Markdown instead of writing FILE.md")
    args = parser.parse_args(argv)
    try:
        document = json.loads(args.json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"benchmarks.summary: error: {args.json}: {e}", file=sys.stderr)
        return 2
    text = render(document, args.json.name)
    if args.stdout:
        sys.stdout.write(text)
        return 0
    from levelfield.ground.fsutil import atomic_write_text

    out = args.json.with_suffix(".md")
    atomic_write_text(out, text, overwrite=True)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
