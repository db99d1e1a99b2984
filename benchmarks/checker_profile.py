"""Where `levelfield check` spends its time on a generated tree: one check_tree under cProfile, by part.

    python -m benchmarks.checker_profile --copies 6 --out benchmarks/results/2026-11-28-checker-profile
    python -m benchmarks.checker_profile --mlcommons 40 --out /tmp/inference-profile

Builds the checker benchmark's tree (benchmarks/synthetic_tree.py: the
example's 21 results under `--copies` system ids, hard links), or with
`--mlcommons N` an Inference round of N copies of the corpus's submitter
folders, pays the process's one-time costs (the labels, a first check of the
example or the corpus), then checks the tree once without the profiler (CPU
seconds: the figure per result) and once under cProfile. Writes OUT.pstats and
OUT.md: the CPU seconds per result, the share of each part of the check
(cumulative time of the functions that do it), and the 25 functions with the
most time of their own. cProfile adds a cost per Python call, so the shares
overstate code that makes many small calls against code that runs in C (the
JSON scanner, zlib, regular expressions, numpy); read them with the CPU figure.
This is the evidence docs/benchmarks.md cites where the 1,000 results/s goal
is not met.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.checker_speed import EXAMPLE
from benchmarks.mlcommons_speed import INFERENCE

# The parts of a check: (label, file suffix, function name) whose cumulative time is the part's.
PARTS = (
    ("listing and reading the tree (SHA-256 of every file)", "submission/tree.py", "read_tree"),
    ("MLLOG files: parse_mllog (the JSON of every line)", "ground/parse.py", "parse_mllog"),
    ("MLLOG lines against their schemas (compiled predicates)", "submission/shapes.py", "shape_problems"),
    ("accuracy logs: gunzip", "ground/parse.py", "gunzip"),
    ("accuracy logs: LoadGen's layout read as arrays", "ground/accuracy_log.py", "parse_accuracy_log"),
    ("accuracy logs: re-scored (decode and metric)", "ground/accuracy.py", "score_entries"),
    ("JSON documents (result, settings, environment, ...)", "submission/loader.py", "_json"),
    ("all registered checks (run_check), the re-score included", "checker/engine.py", "run_check"),
    ("MLCommons Inference: one result's files", "mlcommons/inference.py", "_check_result"),
    ("MLCommons Inference: detail logs (parse_mllog)", "mlcommons/inference.py", "_detail"),
)


def _cumulative(stats: pstats.Stats, suffix: str, name: str) -> float:
    return sum(
        entry[3] for (file, _, function), entry in stats.stats.items() if file.endswith(suffix) and function == name
    )


def _table(stats: pstats.Stats, total_s: float) -> list[str]:
    lines = ["| part | cumulative s | share |", "| --- | --- | --- |"]
    for label, suffix, name in PARTS:
        seconds = _cumulative(stats, suffix, name)
        if seconds:
            lines.append(f"| {label} (`{name}`) | {seconds:.3f} | {seconds / total_s:.0%} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.checker_profile", description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=6, help="copies of the example's results (default 6)")
    parser.add_argument("--mlcommons", type=int, default=None, metavar="N", help="an Inference round of N copies")
    parser.add_argument("--out", type=Path, required=True, help="OUT.pstats and OUT.md are written")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="levelfield-profile-") as tmp:
        if args.mlcommons:
            from benchmarks.synthetic_tree import InferenceRound
            from levelfield.checker.mlcommons.inference import check_inference_tree as check

            tree = InferenceRound(INFERENCE, Path(tmp) / INFERENCE.name)
            tree.grow(args.mlcommons)
            root, what = tree.root, f"an MLCommons Inference round, {args.mlcommons} copies of the corpus's submitters"
            check(INFERENCE)  # lazy imports, the round's rules
        else:
            from benchmarks.synthetic_tree import ScaledTree
            from levelfield.checker.context import Context
            from levelfield.checker.engine import check_tree as check
            from levelfield.rules import load_suite

            tree = ScaledTree(EXAMPLE, Path(tmp))
            tree.grow(args.copies)
            root, what = tree.root, f"the checker benchmark's tree, {args.copies} copies of submissions/example"
            Context(load_suite()).labels("ctr-dlrm")
            check(EXAMPLE)
        started = time.process_time()
        check(root)
        cpu_s = time.process_time() - started
        profiler = cProfile.Profile()
        profiler.runcall(check, root)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    pstats_path = args.out.with_suffix(".pstats")
    profiler.dump_stats(pstats_path)
    stats = pstats.Stats(str(pstats_path))
    total_s = max(entry[3] for entry in stats.stats.values())
    listing = io.StringIO()
    pstats.Stats(str(pstats_path), stream=listing).sort_stats("tottime").print_stats(25)
    body = listing.getvalue()
    top = body[body.index("   ncalls") :] if "   ncalls" in body else body
    results = tree.results
    lines = [
        f"# Profile of `levelfield check`: {what}",
        "",
        f"`python -m benchmarks.checker_profile {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        f"- {results:,} results, {tree.files:,} files; check without the profiler: {cpu_s:.2f} s CPU = "
        f"{1000 * cpu_s / results:.2f} ms CPU per result ({results / cpu_s:,.0f} results per CPU second)",
        f"- under cProfile: {total_s:.2f} s; `{pstats_path.name}` holds the whole profile "
        f"(`python -m pstats {pstats_path.name}`, then `sort cumulative`, `stats 40`)",
        "- cProfile's cost per Python call inflates the shares of Python-heavy parts against C ones",
        "",
        "## Where the time goes (cumulative time of the functions doing each part)",
        "",
        *_table(stats, total_s),
        "",
        "## The 25 functions with the most time of their own",
        "",
        "```",
        top.rstrip(),
        "```",
        "",
    ]
    md_path = args.out.with_suffix(".md")
    md_path.write_text("\n".join(lines), encoding="utf-8")
    print(f"{md_path}: {results:,} results, {1000 * cpu_s / results:.2f} ms CPU per result")
    return 0


if __name__ == "__main__":
    sys.exit(main())
