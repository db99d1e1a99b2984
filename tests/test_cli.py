"""The CLI: help with examples everywhere, no framework imports, no tracebacks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import run_cli
from levelfield.cli.commands import COMMAND_MODULES
from levelfield.cli.main import build_parser

FRAMEWORKS = ("torch", "tensorflow", "jax", "flax", "optax", "keras")


def all_command_paths() -> list[list[str]]:
    """Every (sub)command, e.g. ['rules', 'show'], discovered from the parser itself."""
    found = []

    def walk(parser, prefix):
        for action in parser._actions:  # argparse offers no public way to list subparsers
            if action.__class__.__name__ == "_SubParsersAction":
                for name, sub in action.choices.items():
                    found.append(prefix + [name])
                    walk(sub, prefix + [name])

    walk(build_parser(), [])
    return found


def test_every_command_module_registers():
    names = {path[0] for path in all_command_paths()}
    assert names == {module.replace("_", "-") for module in COMMAND_MODULES}  # device_check: device-check


@pytest.mark.parametrize("path", all_command_paths(), ids=" ".join)
def test_help_has_examples(path):
    result = run_cli(*path, "--help")
    assert result.returncode == 0, result.stderr
    assert "examples:" in result.stdout and "levelfield " + path[0] in result.stdout


def test_top_level_help_and_version():
    result = run_cli("--help")
    assert result.returncode == 0 and "examples:" in result.stdout
    assert run_cli("--version").stdout.startswith("levelfield ")


def test_no_command_prints_usage_and_fails():
    result = run_cli()
    assert result.returncode == 2 and "usage:" in result.stderr


@pytest.mark.parametrize(
    "module",
    [
        "levelfield.cli.main",
        "levelfield.checker",
        "levelfield.rules",
        "levelfield.ground.sysinfo",
        "levelfield.reference",
    ],
)
def test_importing_does_not_import_a_framework(module):
    code = (
        f"import sys, {module}; from levelfield.cli.main import build_parser; build_parser(); "
        f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
