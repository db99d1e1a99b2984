"""`levelfield list`: the registered implementations, task x framework, and whether each can run here.

levelfield list
"""

from __future__ import annotations

import argparse

from levelfield.cli.commands import add_command, add_rules_options


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "list",
        help="list the registered implementations (task x framework)",
        description="Every task x framework of the rules, what the rules name the framework for (training, "
        "inference: rules 1.2 name onnxruntime for inference only), the module that implements it, and "
        "whether the framework is installed here. Nothing is imported to find out.",
        examples=["levelfield list", "levelfield list --rules-version 1.2     with onnxruntime, for inference"],
    )
    add_rules_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from levelfield.ground.registry import registered
    from levelfield.rules import load_suite

    entries = registered(load_suite(args.rules_version, args.rules_dir))
    rows = [
        {
            "task": e.task,
            "framework": e.framework,
            "implementation": e.module if e.present else "missing",
            "framework installed": e.framework_version or "no",
            "for": " + ".join(e.roles),  # last: scripts read the columns before it by position
        }
        for e in entries
    ]
    print(tabulate(rows, headers="keys", tablefmt="github"))
    ready = sum(e.present and e.framework_version is not None for e in entries)
    print(f"{sum(e.present for e in entries)} registered implementations, {ready} runnable here")
    return 0
