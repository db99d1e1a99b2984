"""`levelfield list`: the registered implementations, task x framework, and whether each can run here.

levelfield list

Built-ins first (every task x framework of the rules), then the installed plugins' (entry-point group
levelfield.implementations, docs/plugins.md); a plugin declaration that is refused (a built-in's
framework id, a malformed name) is one line on stderr. Nothing is imported to find out.
"""

from __future__ import annotations

import argparse
import sys

from levelfield.cli.commands import add_command, add_rules_options


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "list",
        help="list the registered implementations (task x framework)",
        description="Every task x framework of the rules, what the rules name the framework for (training, "
        "inference: rules 1.2 name onnxruntime for inference only), the module that implements it, and "
        "whether the framework is installed here; then every implementation an installed plugin registers "
        "(entry-point group levelfield.implementations, docs/plugins.md), with its distribution. "
        "A refused plugin declaration is one line on stderr. Nothing is imported to find out.",
        examples=["levelfield list", "levelfield list --rules-version 1.2     with onnxruntime, for inference"],
    )
    add_rules_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from levelfield.ground.registry import plugins, registered
    from levelfield.rules import load_suite

    suite = load_suite(args.rules_version, args.rules_dir)
    entries = registered(suite)
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
    served, refused = plugins()
    for d in served:
        task = d.task if d.task in suite.tasks else f"{d.task} (not a task of rules {suite.version})"
        installed = f"plugin {d.distribution} {d.version}"
        row = {"task": task, "framework": d.framework, "implementation": d.value, "framework installed": installed}
        rows.append(row)
    print(tabulate(rows, headers="keys", tablefmt="github"))
    for _framework, line in refused:
        print(f"levelfield: plugin refused: {line}", file=sys.stderr)
    ready = sum(e.present and e.framework_version is not None for e in entries)
    print(f"{sum(e.present for e in entries)} registered implementations, {ready} runnable here", end="")
    print(f"; {len(served)} from plugins" if served or refused else "")
    if suite.plugin_divisions:
        print(f"plugins' results: rules {suite.version} admit them in the {', '.join(suite.plugin_divisions)} division")
    elif served:
        print(f"plugins' results: rules {suite.version} admit none (no plugin_divisions)")
    return 0
