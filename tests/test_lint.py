"""ruff's lint and format, as configured in pyproject.toml ([tool.ruff]), hold for the whole repository."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


def ruff(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    if RUFF is None:
        pytest.fail("ruff is not installed: it is a dev dependency (pip install -e '.[dev]'; make test does)")
    return subprocess.run([RUFF, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_ruff_finds_no_lint():
    done = ruff("check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_is_formatted():
    done = ruff("format", "--check", ".")
    assert done.returncode == 0, f"run `ruff format .`:\n{done.stdout}{done.stderr}"


def test_the_configuration_catches_a_lint_and_a_format_problem(tmp_path):
    """The two tests above can fail: the repository's settings flag a bad file."""
    shutil.copyfile(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "bad.py").write_text("import os\nx = {  'a':1 }\n")
    lint = ruff("check", "--output-format", "concise", "bad.py", cwd=tmp_path)
    assert lint.returncode == 1 and "F401" in lint.stdout
    fmt = ruff("format", "--check", "bad.py", cwd=tmp_path)
    assert fmt.returncode == 1 and "bad.py" in fmt.stdout
