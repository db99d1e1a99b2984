"""Shared test helpers: run the real CLI in a subprocess, copy the shipped rules."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The example submission the checker and leaderboard tests judge (LEVELFIELD_EXAMPLE: another tree).
EXAMPLE = Path(os.environ.get("LEVELFIELD_EXAMPLE", REPO / "submissions" / "example"))
# Building writes build/ and *.egg-info next to the sources: tests that build copy the sources first.
_NOT_SOURCES = shutil.ignore_patterns(
    ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "demo-out"
)


def copy_sources(target: Path) -> Path:
    """The checkout's sources, without its environment, git history or build outputs, copied to `target`."""
    shutil.copytree(REPO, target, ignore=_NOT_SOURCES)
    return target


def default_rules_version() -> str:
    """The rules version tools use when none is named (the newest final one): a test that edits a rules
    copy and runs without --rules-version edits this version's files."""
    from levelfield.rules import load_suite

    return load_suite().version


def example_rules_version() -> str:
    """The rules version the committed example submission declares (its code/levelfield.json): fixtures
    that judge the example under edited rules edit this version's files."""
    import json

    (code,) = EXAMPLE.glob("*/*/code/levelfield.json")
    return json.loads(code.read_text())["rules_version"]


def run_cli(
    *args: str, cwd: Path | None = None, env: dict | None = None, timeout_s: float = 300
) -> subprocess.CompletedProcess:
    """`python -m levelfield ARGS` in a fresh process, as a user would run it."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "levelfield", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def start_long_training(out: Path) -> subprocess.Popen:
    """`levelfield train` in the background for minutes (ctr-dlrm, PyTorch eager, 2 submission-profile runs),
    for tests that interrupt or kill it mid-run."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "levelfield",
            "train",
            "--task",
            "ctr-dlrm",
            "--framework",
            "pytorch",
            "--eager",
            "--runs",
            "2",
            "--seed",
            "1",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def assert_user_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """A user mistake: exit 2, every fragment in stderr, and no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


@pytest.fixture
def rules_copy(tmp_path: Path) -> Path:
    """A writable copy of the shipped rules folder (versions + schemas)."""
    target = tmp_path / "rules"
    shutil.copytree(REPO / "rules", target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return target


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """One real Slurm cluster (tests/slurm_cluster.py) for every Slurm test of the session: two nodes in two
    network namespaces where they can be made, else one; skips where Slurm is not installed."""
    from slurm_cluster import slurm_cluster

    with slurm_cluster(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster
