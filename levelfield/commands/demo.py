"""`levelfield demo`: the end-to-end demo that README command 1 runs.

    levelfield demo --out demo-out

Today it shows the foundation: every dataset verified against the rules'
SHA-256, this machine's system description written and printed, and the task
table. Later stages (train, infer, package, check, leaderboard) join it as
they land.
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

from levelfield.commands import add_command, add_rules_options

# Written into the output folder, so a re-run may replace what an earlier demo
# wrote there, and only that: any other non-empty folder is refused.
MARKER = ".levelfield-demo"


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "demo", help="run the end-to-end demo",
        description="Verify the datasets, write this machine's system description and print the task set. "
                    "Everything the demo writes goes into --out.",
        examples=["levelfield demo --out demo-out", "levelfield demo --out /tmp/lf --data-dir ~/fmnist"])
    parser.add_argument("--out", metavar="DIR", type=Path, default=Path("demo-out"),
                        help="output folder (default: demo-out); re-running replaces an earlier demo's output")
    parser.add_argument("--data-dir", metavar="DIR", help="Fashion-MNIST folder (default: $LEVELFIELD_DATA_DIR, "
                                                          "else /usr/share/datasets/fashion-mnist)")
    add_rules_options(parser)
    parser.set_defaults(func=run)


def claim_output_folder(out: Path) -> None:
    """Create `out`, or reuse it if an earlier demo made it; never write into someone else's folder."""
    from levelfield.errors import UserError

    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a folder", hint="choose another --out")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise UserError(f"{out}: folder is not empty and was not made by `levelfield demo`; not writing into it",
                        hint="choose another --out, or an empty folder")
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by levelfield demo; a re-run may replace this folder's content\n")


def banner(step: int, total: int, title: str) -> None:
    print(f"\n== [{step}/{total}] {title} ==", flush=True)


def run(args) -> int:
    from levelfield.commands import data, rules
    from levelfield.fsutil import atomic_write_text
    from levelfield.tools.accelerators import query_nvml
    from levelfield.tools.sysinfo import collect_system_description, placeholder_paths, to_json

    claim_output_folder(args.out)
    steps = 3
    banner(1, steps, "datasets: SHA-256 of every file and generated array against the rules")
    data.run(argparse.Namespace(task=None, data_dir=args.data_dir,
                                rules_dir=args.rules_dir, rules_version=args.rules_version))

    banner(2, steps, "system description of this machine")
    report = query_nvml()
    desc = collect_system_description(nvml_report=report)
    system_file = args.out / "systems" / f"{socket.gethostname() or 'this-system'}.json"
    atomic_write_text(system_file, to_json(desc), overwrite=True)
    print(to_json(desc), end="")
    if report["unavailable_reason"]:
        print(f"no NVIDIA accelerator: {report['unavailable_reason']}")
    print(f"wrote {system_file}; a vendor fills in {', '.join(placeholder_paths(desc))} "
          f"and validates it with: levelfield sysinfo --check {system_file}")

    banner(3, steps, "the task set")
    rules.run_show(argparse.Namespace(task=None, rules_dir=args.rules_dir, rules_version=args.rules_version))
    print("\n(* provisional target: calibrated by the reference runs)")
    print(f"\ndemo finished; output in {args.out}/", file=sys.stdout)
    return 0
