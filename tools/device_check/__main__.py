"""`python -m levelfield.tools.device_check --out DIR`: the device check (package docstring)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from levelfield.tools.device_check.execute import run_plan
from levelfield.tools.device_check.plan import FRAMEWORKS, KINDS, SIZES, build_plan
from levelfield.tools.device_check.report import JSON_NAME, installed_versions, write_reports

MODULES = {"pytorch": "torch", "tensorflow": "tensorflow", "jax": "jax"}
DEFAULT_TIME_LIMIT_S = 360.0  # the budget on one H100-class GPU (6 minutes)
EXAMPLES = """examples:
  python -m levelfield.tools.device_check --out build/device-check            # GPU size if a GPU is found
  python -m levelfield.tools.device_check --out /tmp/dc --size smoke --time-limit-s 300   # CPU scale
  python -m levelfield.tools.device_check --out /tmp/dc --frameworks pytorch jax
"""


def present_frameworks() -> list[str]:
    return [fw for fw in FRAMEWORKS if importlib.util.find_spec(MODULES[fw]) is not None]


def gpu_present() -> bool:
    """An NVIDIA GPU as NVML sees it (the same query `levelfield sysinfo` makes)."""
    from levelfield.ground.accelerators import query_nvml

    return bool(query_nvml()["devices"])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m levelfield.tools.device_check",
        description="Run every GPU path of levelfield once under a time limit (sysinfo, a time-to-accuracy "
        "run per framework, throughput-only training and LoadGen Offline/SingleStream runs of the standard "
        "tasks, the equivalence tests) and write device_check.json and device_check.md into --out. "
        "Exit 0 only when every step passed.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for the reports, logs and runs")
    parser.add_argument(
        "--size", choices=("auto", *SIZES), default="auto", help="gpu (standard tasks), smoke (CPU scale), auto"
    )
    parser.add_argument("--time-limit-s", type=float, default=DEFAULT_TIME_LIMIT_S, help="stop starting steps then")
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, help="default: every one importable here")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=KINDS, help="default: every kind of step")
    parser.add_argument("--rules-version", help="default: the newest final rules")
    parser.add_argument("--force", action="store_true", help="replace the reports of an earlier check in --out")
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="the checkout whose tests/ to run")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.time_limit_s <= 0:
        print(f"device_check: --time-limit-s {args.time_limit_s}: expected a positive number", file=sys.stderr)
        return 2
    present = present_frameworks()
    frameworks = args.frameworks or present
    missing = [fw for fw in frameworks if fw not in present]
    if missing or not frameworks:
        print(f"device_check: frameworks {missing or frameworks} not importable here (have {present})", file=sys.stderr)
        return 2
    if (args.out / JSON_NAME).exists() and not args.force:
        print(
            f"device_check: {args.out / JSON_NAME}: an earlier check's report (pass --force to replace it)",
            file=sys.stderr,
        )
        return 2
    size = args.size if args.size != "auto" else ("gpu" if gpu_present() else "smoke")
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    header = {
        "size": size,
        "time_limit_s": args.time_limit_s,
        "started_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python": sys.version.split()[0],
        "frameworks": frameworks,
        "absent": [fw for fw in FRAMEWORKS if fw not in frameworks],
        "versions": installed_versions(),
        "elapsed_s": 0.0,
    }

    def write(results: list[dict]) -> dict:
        header["elapsed_s"] = round(time.monotonic() - started, 1)
        return write_reports(args.out, header, results)

    steps = build_plan(size, frameworks, args.rules_version, tuple(args.kinds))
    doc = write(run_plan(steps, args.out, args.time_limit_s, args.repo.resolve(), on_step=write))
    print((args.out / "device_check.md").read_text())
    return 0 if doc["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
