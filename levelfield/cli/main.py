"""The `levelfield` command line.

    levelfield --help
    levelfield rules show
    levelfield data verify
    levelfield sysinfo --out systems/my-system.json

User mistakes raise `UserError`; this module turns them into `levelfield: error:`
lines on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from levelfield import __version__
from levelfield.cli.commands import COMMAND_MODULES
from levelfield.ground import host_load
from levelfield.ground.errors import EXIT_USER_ERROR, UserError, report_error

EXAMPLES = """\
examples:
  levelfield rules show                       the task table of the newest rules
  levelfield rules show --task fmnist-resnet  one task in detail
  levelfield data verify                      check every dataset against its SHA-256
  levelfield sysinfo --out systems/box.json   write a hardware declaration to fill in
  levelfield demo --out demo-out              the end-to-end demo

Run `levelfield COMMAND --help` for a command's options and examples."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="levelfield",
        description="An MLPerf-style benchmark suite that compares ML frameworks on a level field.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"levelfield {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"levelfield.cli.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    host_load.watch_from_here()  # train and infer warn when other processes kept the host busy meanwhile
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USER_ERROR
    try:
        return int(args.func(args) or 0)
    except UserError as error:
        report_error(error)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("levelfield: interrupted", file=sys.stderr)
        return 130
