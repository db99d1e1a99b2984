"""`levelfield device-check`: every GPU path once under a time limit (levelfield/cli/device_check/).

levelfield device-check --out build/device-check
levelfield device-check --out /tmp/dc --size smoke --time-limit-s 600
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from levelfield.cli.commands import add_command, add_rules_options

DEFAULT_TIME_LIMIT_S = 360.0  # the budget on one H100-class GPU (6 minutes)
# The module that makes a framework present (importable, not imported: this process imports none).
MODULES = {"pytorch": "torch", "tensorflow": "tensorflow", "jax": "jax"}


def register(subparsers: argparse._SubParsersAction) -> None:
    from levelfield.cli.device_check.plan import FRAMEWORKS, KINDS, SIZES

    parser = add_command(
        subparsers,
        "device-check",
        help="run every GPU path once under a time limit (device_check.json and .md)",
        description="Run every GPU path of levelfield once under a time limit: the system description (NVML), "
        "per framework one time-to-accuracy run, LoadGen Offline and SingleStream runs and throughput-only "
        "training of every standard task (each precision the rules allow), all in one process per framework; "
        "then the cross-framework equivalence tests in one pytest process. device_check.json and "
        "device_check.md in --out are rewritten after every step. Exit 0 only when every step passed.",
        examples=[
            "levelfield device-check --out build/device-check            # GPU size when a GPU is found",
            "levelfield device-check --out /tmp/dc --size smoke --time-limit-s 600   # CPU scale, as CI runs it",
            "levelfield device-check --out /tmp/dc --frameworks pytorch jax --kinds sysinfo inference",
            "levelfield device-check --out /tmp/dc --size gpu --frameworks pytorch jax --dry-run   # what would run",
            "bash tools/device_check/node.sh build/wheels-py3.12 OUT     # on an offline GPU node (make wheels)",
        ],
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for the reports, logs and runs")
    parser.add_argument(
        "--size", choices=("auto", *SIZES), default="auto", help="gpu (standard tasks), smoke (CPU scale), auto"
    )
    parser.add_argument(
        "--time-limit-s",
        type=float,
        default=DEFAULT_TIME_LIMIT_S,
        metavar="S",
        help=f"stop at this many seconds, reporting what finished (default {DEFAULT_TIME_LIMIT_S:.0f})",
    )
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, help="default: every one importable here")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=KINDS, help="default: every kind of step")
    parser.add_argument("--force", action="store_true", help="replace the reports and runs of an earlier check")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="run nothing: print the plan with each step's estimate and whether it would run within the limit "
        "(--frameworks need not be installed)",
    )
    parser.add_argument(
        "--repo", type=Path, default=Path.cwd(), metavar="DIR", help="the checkout whose tests/ to run (default: .)"
    )
    add_rules_options(parser)
    parser.set_defaults(func=run)


def present_frameworks() -> list[str]:
    from levelfield.cli.device_check.plan import FRAMEWORKS

    return [fw for fw in FRAMEWORKS if importlib.util.find_spec(MODULES[fw]) is not None]


def gpu_present() -> bool:
    """An NVIDIA GPU as NVML sees it (the same query `levelfield sysinfo` makes)."""
    from levelfield.ground.accelerators import query_nvml

    return bool(query_nvml()["devices"])


def dry_run(args: argparse.Namespace, frameworks: list[str]) -> int:
    from levelfield.cli.device_check.budget import expected
    from levelfield.cli.device_check.plan import build_plan
    from levelfield.cli.device_check.report import expected_markdown

    size = args.size if args.size != "auto" else ("gpu" if gpu_present() else "smoke")
    plan = build_plan(size, frameworks, args.rules_version, args.rules_dir, tuple(args.kinds))
    print(expected_markdown(expected(plan, args.time_limit_s), args.time_limit_s, size), end="")
    return 0


def run(args: argparse.Namespace) -> int:
    from levelfield.cli.device_check.execute import run_check
    from levelfield.cli.device_check.plan import FRAMEWORKS, build_plan
    from levelfield.cli.device_check.report import JSON_NAME, MARKDOWN_NAME, installed_versions, write_reports
    from levelfield.ground.errors import UserError

    if not args.time_limit_s > 0:
        raise UserError(f"--time-limit-s {args.time_limit_s}: expected a positive number of seconds")
    present = present_frameworks()
    frameworks = args.frameworks or present
    if args.dry_run:
        return dry_run(args, frameworks)
    missing = [fw for fw in frameworks if fw not in present]
    if missing or not frameworks:
        named = ", ".join(missing or frameworks) or "none"
        raise UserError(f"--frameworks: {named} not importable here (importable: {', '.join(present) or 'none'})")
    if (args.out / JSON_NAME).exists() and not args.force:
        raise UserError(
            f"{args.out / JSON_NAME}: an earlier check's report; not overwriting it",
            hint="choose another --out, or pass --force to replace it",
        )
    size = args.size if args.size != "auto" else ("gpu" if gpu_present() else "smoke")
    plan = build_plan(size, frameworks, args.rules_version, args.rules_dir, tuple(args.kinds))
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    header = {
        "size": size,
        "time_limit_s": args.time_limit_s,
        "started_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "rules_version": plan.rules_version,
        "python": sys.version.split()[0],
        "frameworks": list(plan.frameworks),
        "absent": [fw for fw in FRAMEWORKS if fw not in plan.frameworks],
        "versions": installed_versions(),
        "elapsed_s": 0.0,
    }

    def write(results: list[dict], processes: list[dict]) -> dict:
        header["elapsed_s"] = round(time.monotonic() - started, 1)
        return write_reports(args.out, header, results, processes)

    results, processes = run_check(
        plan,
        args.out,
        args.time_limit_s,
        args.repo.resolve(),
        force=args.force,
        rules_dir=args.rules_dir,
        on_change=write,
    )
    doc = write(results, processes)
    print((args.out / MARKDOWN_NAME).read_text())
    return 0 if doc["passed"] else 1
