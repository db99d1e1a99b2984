"""`python -m benchmarks`: levelfield's own performance benchmarks (`make bench` runs them).

    python -m benchmarks                                   # every benchmark, full length (~25-40 min)
    python -m benchmarks harness --frameworks jax          # one benchmark, one framework
    python -m benchmarks --quick --out /tmp/bench          # a minute or two; what the tests run, per benchmark
    python -m benchmarks checker --profile-out build/prof  # with cProfile evidence (.pstats + top 20 in the summary)

Benchmarks (docs/benchmarks.md): harness (LoadGen runner vs raw predict;
Server's peak vs Offline), trainer (levelfield train vs a bare loop), compile
(compiled vs eager), checker (levelfield check vs mlperf_logging; large
trees), noise (CV of repeated Offline runs), batch_latency (predict latency
per batch size: the measurement the rules' Server bounds come from), mlcommons
(levelfield check on published MLCommons trees), step (the steady compiled
train step split into forward, backward, optimizer and host, the predict call,
each framework against the task's fastest: issue 17's 2x goal),
input_pipeline (image-resnet50-standard's steps with each framework's input
pipeline against in-memory batches: the pipeline's share of step time).

Each run writes one JSON file, `<out>/<date>-<host>.json` (default out:
benchmarks/results/), holding the machine's context (CPUs, load average at
the start: the machine may be shared), the goals it is judged by
(benchmarks/goals.py) and every raw figure next to each ratio, and a Markdown
summary rendered from it next to it (`<date>-<host>.md`; benchmarks/summary.py
renders it again from any JSON). It prints what is compared as it goes.
Benchmarks measure; they assert nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import socket
import sys
import time
from pathlib import Path

from benchmarks.catalog import BENCHMARKS, module

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_TASK = "ctr-dlrm"  # the fastest model: the harness's and the trainer's share of the time shows most


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "benchmarks", nargs="*", metavar="NAME", help=f"which to run, of {', '.join(BENCHMARKS)} (default: all)"
    )
    parser.add_argument(
        "--task", default=DEFAULT_TASK, help=f"task of harness, trainer and noise (default {DEFAULT_TASK})"
    )
    parser.add_argument(
        "--tasks",
        default=None,
        help="comma-separated tasks of compile, batch_latency and step "
        "(default: fmnist-resnet,seq-transformer,ctr-dlrm)",
    )
    parser.add_argument(
        "--frameworks",
        default=None,
        help="comma-separated frameworks (default: pytorch,tensorflow,jax, and for harness also "
        "none = a predict that costs nothing, the harness's floor)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny run lengths: checks the code, not the numbers")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for the JSON result and its summary")
    parser.add_argument(
        "--profile-out",
        type=Path,
        default=None,
        metavar="DIR",
        help="run each benchmark under cProfile: DIR/<benchmark>.pstats, and the top 20 "
        "cumulative lines in the JSON and the summary (timings then are not results)",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.benchmarks) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)} (expected one of: {', '.join(BENCHMARKS)})")
    return args


def context() -> dict:
    from levelfield import __version__

    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "levelfield": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": load,
        "stderr_is_tty": sys.stderr.isatty(),
    }  # progress bars (the trainer's, LoadGen's) draw only on a tty


def result_path(out: Path) -> Path:
    """<out>/<date>-<host>.json; a second run on the same day adds the time rather than overwrite."""
    now, host = datetime.datetime.now(), socket.gethostname()
    path = out / f"{now:%Y-%m-%d}-{host}.json"
    return path if not path.exists() else out / f"{now:%Y-%m-%d-%H%M%S}-{host}.json"


def split(text: str | None) -> list[str] | None:
    return None if text is None else [item.strip() for item in text.split(",") if item.strip()]


def check_ids(args: argparse.Namespace) -> None:
    """Refuse unknown tasks and frameworks before anything runs (UserError), not in a child's traceback."""
    from benchmarks.options import inference_rules_version
    from levelfield.ground.registry import INFERENCE_ONLY
    from levelfield.rules import load_suite

    suite = load_suite()
    for task_id in [args.task, *(split(args.tasks) or [])]:
        suite.task(task_id)
    for framework in split(args.frameworks) or []:
        if framework in INFERENCE_ONLY:  # the harness benchmark serves it under a rules version that names it
            inference_rules_version(framework)
        elif framework != "none":
            suite.check_id("framework", framework)


def run_one(name: str, args: argparse.Namespace, document: dict) -> None:
    from benchmarks.options import Options
    from benchmarks.profiling import BenchmarkProfile

    bench = module(name)
    config = bench.QUICK if args.quick else bench.FULL
    options = Options(
        task=args.task,
        tasks=split(args.tasks) or list(module("compile").DEFAULT_TASKS),
        frameworks=split(args.frameworks),
        report=lambda line: print(line, flush=True),
    )
    print(f"\n{name}: {bench.TITLE}", flush=True)
    started = time.perf_counter()
    if args.profile_out is None:
        result = bench.run(options, config)
    else:
        options.profile = BenchmarkProfile(name, args.profile_out)
        with options.profile:
            result = bench.run(options, config)
        document.setdefault("profiles", {})[name] = options.profile.finish()
    result["config"] = config.__dict__
    result["bench_s"] = time.perf_counter() - started
    document["benchmarks"][name] = result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from benchmarks.goals import snapshot
    from benchmarks.summary import render
    from levelfield.ground.errors import UserError
    from levelfield.ground.fsutil import atomic_write_text

    chosen = [name for name in BENCHMARKS if name in args.benchmarks] or list(BENCHMARKS)
    document = {
        "context": context(),
        "quick": args.quick,
        "profiled": args.profile_out is not None,
        "goals": snapshot(),
        "benchmarks": {},
    }
    started = time.perf_counter()
    try:
        check_ids(args)
        for name in chosen:
            run_one(name, args, document)
    except UserError as e:
        print(f"benchmarks: error: {e}", file=sys.stderr)
        return 2
    document["elapsed_s"] = time.perf_counter() - started
    path = result_path(args.out)
    atomic_write_text(path, json.dumps(document, indent=2) + "\n")
    summary = path.with_suffix(".md")
    atomic_write_text(summary, render(document, path.name), overwrite=True)
    print(f"\nresults in {path}, summary in {summary.name} ({document['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
