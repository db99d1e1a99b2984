"""Sub-commands of the `levelfield` CLI, one small module each.

Each module defines `register(subparsers)`, which adds its parser and sets
`func(args) -> int`. Modules import heavy things (frameworks, LoadGen) inside
`func`, never at import time, so `levelfield --help` stays fast and works on a
machine without any ML framework.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

# Order shown in `levelfield --help`.
COMMAND_MODULES = [
    "rules",
    "data",
    "sysinfo",
    "list",
    "train",
    "infer",
    "package",
    "keygen",
    "sign",
    "check",
    "reproduce",
    "calibrate",
    "fidelity",
    "leaderboard",
    "demo",
    "device_check",  # `levelfield device-check`: a module name cannot hold the hyphen
]


def add_command(
    subparsers: argparse._SubParsersAction, name: str, *, help: str, description: str, examples: list[str]
) -> argparse.ArgumentParser:
    """A sub-command parser whose --help ends with runnable examples."""
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    return subparsers.add_parser(
        name, help=help, description=description, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def add_checked_profile_option(parser: argparse.ArgumentParser) -> None:
    """--profile for the commands that judge submission trees (check, leaderboard)."""
    parser.add_argument(
        "--profile",
        metavar="NAME",
        default="submission",
        help="judge every run against this profile of the rules (default: submission; `demo` accepts the "
        "output of `levelfield demo` and labels it as such; other profiles are never results)",
    )


def add_trusted_keys_option(parser: argparse.ArgumentParser) -> None:
    """--trusted-keys for the commands that judge submission trees (check, leaderboard)."""
    parser.add_argument(
        "--trusted-keys",
        type=Path,
        metavar="FILE",
        help="public keys whose signature a tree must carry, one 'ssh-ed25519 AAAA... name' line each "
        "(SIG001 unsigned, SIG003 untrusted key); without it a signature present is still verified",
    )


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """--device for the commands that run a framework (train, infer): its framework-neutral names."""
    parser.add_argument(
        "--device",
        metavar="D",
        help="where the framework computes: cpu, cuda (the current GPU) or cuda:N (default: the first GPU "
        "when the framework sees one, else the CPU; one process only: under --nproc each rank takes its own)",
    )


def add_compile_mode_option(parser: argparse.ArgumentParser) -> None:
    """--compile / --eager for the commands that run a framework (train, infer): `args.compile_mode`."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--compile",
        dest="compile_mode",
        action="store_const",
        const="compiled",
        help="the framework's compiled mode (default): torch.compile, XLA jit, jax.jit",
    )
    mode.add_argument("--eager", dest="compile_mode", action="store_const", const="eager", help="eager execution")
    parser.set_defaults(compile_mode="compiled")


def add_data_dir_option(parser: argparse.ArgumentParser, use: str = "") -> None:
    """--data-dir for every command that reads a dataset's files (train, infer, demo, data verify, reproduce;
    check and leaderboard to re-score accuracy logs, `use`): where a dataset that is read, not generated, lies
    (reference/datasets.py resolves it)."""
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help=f"folder of the dataset files (Fashion-MNIST; the other tasks generate theirs){use} (default: "
        "$LEVELFIELD_DATA_DIR, else the rules' default_dir)",
    )


def add_rules_options(parser: argparse.ArgumentParser) -> None:
    """--rules-dir / --rules-version, for every command that reads rules."""
    group = parser.add_argument_group("rules")
    group.add_argument(
        "--rules-dir",
        metavar="DIR",
        default=os.environ.get("LEVELFIELD_RULES_DIR"),
        help="folder holding rules versions (default: $LEVELFIELD_RULES_DIR, else the rules shipped with levelfield)",
    )
    group.add_argument(
        "--rules-version",
        metavar="V",
        default=None,
        help="rules version to use (default: the newest final one in the rules folder; "
        "a provisional one only when named)",
    )
