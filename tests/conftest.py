"""Shared test helpers: run the real CLI in a subprocess (train, infer, package with the tests' usual options), the
runner's options of one run, copy the shipped rules."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from levelfield.harness.options import InferOptions

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


def cli_command(*args: str) -> list[str]:
    """`python -m levelfield ARGS` as an argument list, for a test that starts the process itself (Popen)."""
    return [sys.executable, "-m", "levelfield", *args]


def run_cli(
    *args: str, cwd: Path | None = None, env: dict | None = None, timeout_s: float = 300
) -> subprocess.CompletedProcess:
    """`python -m levelfield ARGS` in a fresh process, as a user would run it."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        cli_command(*args),
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def _flags(values: dict[str, str | None]) -> list[str]:
    """{"--task": "ctr-dlrm", "--profile": None} -> ["--task", "ctr-dlrm"]: each option and its value, but None."""
    return [part for flag, value in values.items() if value is not None for part in (flag, value)]


# The arguments of the commands the tests run most, with the options they share (the smoke profile unless
# `profile` names another; None: the command's default); `args` add the rest (--eager, --seed 2, --force ...).
def train_args(
    out: Path, *args: str, task: str = "ctr-dlrm", framework: str = "pytorch", profile: str | None = "smoke"
) -> list[str]:
    """`levelfield train`'s arguments: `task` in `framework` into `out`."""
    return [
        "train",
        *_flags({"--task": task, "--framework": framework, "--profile": profile}),
        *args,
        "--out",
        str(out),
    ]


def infer_args(
    out: Path, task: str, framework: str, scenario: str, mode: str, *args: str, profile: str | None = "smoke"
) -> list[str]:
    """`levelfield infer`'s arguments: one scenario and mode into `out`."""
    flags = _flags(
        {"--task": task, "--framework": framework, "--scenario": scenario, "--mode": mode, "--profile": profile}
    )
    return ["infer", *flags, *args, "--out", str(out)]


def package_args(runs: Path, system: Path, org: str, division: str, out: Path, *args: str) -> list[str]:
    """`levelfield package`'s arguments: the runs under `runs` with `system`'s description into `out`."""
    flags = _flags({"--runs": str(runs), "--system": str(system), "--org": org, "--division": division})
    return ["package", *flags, "--out", str(out), *args]


def train_cli(out: Path, *args: str, timeout_s: float = 300, **options: str | None) -> subprocess.CompletedProcess:
    """run_cli of train_args(out, *args, **options)."""
    return run_cli(*train_args(out, *args, **options), timeout_s=timeout_s)


def infer_cli(
    out: Path,
    task: str,
    framework: str,
    scenario: str,
    mode: str,
    *args: str,
    timeout_s: float = 300,
    **options: str | None,
) -> subprocess.CompletedProcess:
    """run_cli of infer_args(out, task, framework, scenario, mode, *args, **options)."""
    return run_cli(*infer_args(out, task, framework, scenario, mode, *args, **options), timeout_s=timeout_s)


def package_cli(
    runs: Path, system: Path, org: str, division: str, out: Path, *args: str
) -> subprocess.CompletedProcess:
    """run_cli of package_args(runs, system, org, division, out, *args)."""
    return run_cli(*package_args(runs, system, org, division, out, *args))


def infer_options(
    task_id: str, framework: str, scenario: str, mode: str, out: Path | None, **settings: object
) -> InferOptions:
    """The harness's InferOptions of one run, as the runner tests make them: the smoke profile and no progress bar
    unless `settings` say otherwise (weights=, repeats=, null_cost=, user_conf=, profile= ...)."""
    from levelfield.harness.options import InferOptions

    settings = {"profile": "smoke", "progress": False, **settings}
    return InferOptions(task_id=task_id, framework=framework, scenario=scenario, mode=mode, out=out, **settings)


def seeded_init_weights(model_spec: ModuleType, seed: int, probe: str) -> dict:
    """A task's init_weights(seed), held to what every task's must be: float32 arrays of PARAMETER_SHAPES in its
    order, the same for the same seed and others for another (the array `probe`). Returns them for the task's own
    checks of its initialisation rule."""
    import numpy as np

    a, b, c = (model_spec.init_weights(s) for s in (seed, seed, seed + 1))
    assert list(a) == list(model_spec.PARAMETER_SHAPES)
    assert all(v.dtype == np.float32 and v.shape == model_spec.PARAMETER_SHAPES[n] for n, v in a.items())
    assert all(np.array_equal(a[n], b[n]) for n in a)
    assert not np.array_equal(a[probe], c[probe])
    return a


def start_long_training(out: Path) -> subprocess.Popen:
    """`levelfield train` in the background for minutes (ctr-dlrm, PyTorch eager, 2 submission-profile runs),
    for tests that interrupt or kill it mid-run."""
    return subprocess.Popen(
        cli_command(*train_args(out, "--eager", "--runs", "2", "--seed", "1", profile=None)),
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
