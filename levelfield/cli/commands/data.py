"""levelfield data verify: check every task's dataset against the SHA-256 digests in the rules.

    levelfield data verify
    levelfield data verify --task fmnist-resnet --data-dir ~/datasets/fashion-mnist

Prints one row per digest compared; exits 0 when all match, else 2 with one
`levelfield: error:` line per problem (file, digest found, digest expected)
and a hint saying how to get the right data.
"""

from __future__ import annotations

import argparse

from levelfield.cli.commands import add_command, add_data_dir_option, add_rules_options
from levelfield.ground.errors import UserError

DIGEST_SHOWN_CHARS = 16  # enough to tell digests apart in a table; errors print them whole


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "data",
        help="check datasets against the digests pinned in the rules",
        description="Dataset commands. Fashion-MNIST is read from disk; the other tasks' data are generated "
        "(bit-identical on every machine); both are checked against SHA-256 digests in the rules.",
        examples=[
            "levelfield data verify",
            "levelfield data verify --task ctr-dlrm",
            "levelfield data verify --data-dir ~/datasets/fashion-mnist",
        ],
    )
    parser.set_defaults(func=lambda args: parser.error("choose a subcommand: verify"))
    actions = parser.add_subparsers(dest="data_command", metavar="SUBCOMMAND")
    verify = add_command(
        actions,
        "verify",
        help="compare each dataset's SHA-256 with the rules",
        description="Compute the SHA-256 of every dataset file (or of the generated arrays) and compare it "
        "with the digest pinned in the rules. Data folder for file datasets: --data-dir, else "
        "$LEVELFIELD_DATA_DIR, else the rules' default_dir.",
        examples=[
            "levelfield data verify",
            "levelfield data verify --task fmnist-resnet",
            "LEVELFIELD_DATA_DIR=/data/fmnist levelfield data verify",
            "levelfield data verify --data-dir /data/fmnist --rules-version 1.0",
        ],
    )
    verify.add_argument("--task", metavar="T", help="verify only this task (default: every task)")
    add_data_dir_option(verify)
    add_rules_options(verify)
    verify.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here so `levelfield --help` does not import numpy.
    from tabulate import tabulate

    from levelfield.reference.datasets import verify_dataset
    from levelfield.rules import load_suite

    suite = load_suite(args.rules_version, rules_dir=args.rules_dir)
    if args.task is not None and args.task not in suite.tasks:
        raise UserError(f"unknown task {args.task!r} for --task (expected one of: {', '.join(suite.tasks)})")
    tasks = [suite.tasks[args.task]] if args.task else list(suite.tasks.values())

    rows, problems, hints = [], [], []
    for task in tasks:
        try:
            report = verify_dataset(task, data_dir=args.data_dir)
        except UserError as e:  # nothing to compare (missing folder / file): record it, check the others
            rows.append([task.id, task.dataset["name"], "-", "-", "-", "not checked"])
            problems.append(str(e))
            hints.append(e.hint)
            continue
        for check in report.checks:
            rows.append(
                [
                    task.id,
                    report.dataset,
                    report.source,
                    check.label or check.what,
                    check.actual[:DIGEST_SHOWN_CHARS] + "...",
                    "ok" if check.ok else "MISMATCH",
                ]
            )
        if not report.ok:
            problems.extend(report.problems())
            hints.append(report.hint)

    print(tabulate(rows, headers=["task", "dataset", "source", "checked", "sha256", "digest"]))
    if problems:
        unique_hints = [h for i, h in enumerate(hints) if h and h not in hints[:i]]
        raise UserError("\n".join(problems), hint="; ".join(unique_hints) or None)
    print(f"all {len(rows)} digest(s) match rules {suite.version}")
    return 0
