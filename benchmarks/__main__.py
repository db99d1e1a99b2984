"""`python -m benchmarks`: levelfield's own performance benchmarks (`make bench` runs them).

    python -m benchmarks                                   # every benchmark, full length (a few minutes)
    python -m benchmarks harness --frameworks jax          # one benchmark, one framework
    python -m benchmarks --quick --out /tmp/bench          # seconds; what the tests run

Each run writes one JSON file, `<out>/<date>-<host>.json` (default out:
benchmarks/results/), holding the machine's context (CPUs, load average at
the start: the machine may be shared) and every raw figure next to each ratio,
and prints what is compared as it goes. Benchmarks measure; they assert nothing.
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

RESULTS_DIR = Path(__file__).resolve().parent / "results"
BENCHMARKS = ("harness",)
DEFAULT_TASK = "ctr-dlrm"  # the fastest model: the harness's share of the time shows most
DEFAULT_FRAMEWORKS = ("none", "pytorch", "tensorflow", "jax")  # none: the harness alone (a zero-cost predict)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("benchmarks", nargs="*", metavar="NAME",
                        help=f"which to run, of {', '.join(BENCHMARKS)} (default: all); "
                             "harness = the LoadGen runner against a raw predict loop")
    parser.add_argument("--task", default=DEFAULT_TASK, help=f"task id (default {DEFAULT_TASK})")
    parser.add_argument("--frameworks", default=",".join(DEFAULT_FRAMEWORKS),
                        help="comma-separated frameworks (default: none,pytorch,tensorflow,jax; "
                             "none = a predict that costs nothing, the harness's floor)")
    parser.add_argument("--quick", action="store_true", help="tiny run lengths: checks the code, not the numbers")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for the JSON result")
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
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": socket.gethostname(), "levelfield": __version__, "python": platform.python_version(),
            "machine": platform.machine(), "cpu_count": os.cpu_count(), "load_average_at_start": load}


def result_path(out: Path) -> Path:
    """<out>/<date>-<host>.json; a second run on the same day adds the time rather than overwrite."""
    now, host = datetime.datetime.now(), socket.gethostname()
    path = out / f"{now:%Y-%m-%d}-{host}.json"
    return path if not path.exists() else out / f"{now:%Y-%m-%d-%H%M%S}-{host}.json"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from levelfield.errors import UserError
    from levelfield.fsutil import atomic_write_text

    chosen = args.benchmarks or list(BENCHMARKS)
    frameworks = [f.strip() for f in args.frameworks.split(",") if f.strip()]
    document = {"context": context(), "quick": args.quick, "benchmarks": {}}
    started = time.perf_counter()
    try:
        if "harness" in chosen:
            from benchmarks import harness_efficiency as harness

            config = harness.QUICK if args.quick else harness.FULL
            print(f"harness efficiency, {args.task}: the LoadGen runner against a raw predict loop "
                  f"over the same rows (ratio 1.0 = the harness costs nothing)", flush=True)
            document["benchmarks"]["harness"] = {
                "task": args.task, "config": config.__dict__,
                "frameworks": harness.run(args.task, frameworks, config, lambda line: print(line, flush=True))}
    except UserError as e:
        print(f"benchmarks: error: {e}", file=sys.stderr)
        return 2
    document["elapsed_s"] = time.perf_counter() - started
    path = result_path(args.out)
    atomic_write_text(path, json.dumps(document, indent=2) + "\n")
    print(f"results in {path} ({document['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
