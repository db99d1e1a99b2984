"""The layers of docs/architecture.md hold: import-linter's contracts (pyproject.toml) pass, and break.

import-linter (grimp) finds a package by walking its folder, but levelfield's
subpackages live in top-level folders that setup.cfg maps into the one
namespace (`checker/` is `levelfield.checker`). So the test copies the sources
into that installed shape first, then lints the copy with the repository's
own contracts. The same copy with one forbidden import added must fail.
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = REPO / "pyproject.toml"

# Runs import-linter on the copy: without the editable install's finder (which would serve the
# working tree's levelfield instead) and from the copy's folder (import-linter searches the cwd first).
_LINT = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("__editable__")]
sys.path.insert(0, sys.argv.pop(1))
from importlinter.cli import lint_imports_command
lint_imports_command()
"""


def package_dirs() -> dict[str, Path]:
    """setup.cfg's package_dir: installed package name -> repository folder."""
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    pairs = (line.split("=", 1) for line in cfg["options"]["package_dir"].strip().splitlines())
    return {name.strip(): REPO / folder.strip() for name, folder in pairs}


def installed_shape(dest: Path) -> Path:
    """The repository's Python files laid out as installed (`dest/levelfield/checker/...`); returns dest."""
    folders = package_dirs()
    for package, folder in folders.items():
        nested = [f for name, f in folders.items() if name != package and f.is_relative_to(folder)]
        for source in folder.rglob("*.py"):
            if any(source.is_relative_to(f) for f in nested):
                continue  # a folder mapped to a package of its own is copied by its own entry
            target = dest.joinpath(*package.split("."), source.relative_to(folder))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    return dest


def lint(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _LINT, str(tree), "--no-cache", "--config", str(PYPROJECT)],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return installed_shape(tmp_path_factory.mktemp("installed"))


def test_the_copy_holds_every_mapped_package(tree):
    for package in package_dirs():
        assert (tree.joinpath(*package.split(".")) / "__init__.py").is_file(), package


def test_the_import_contracts_hold(tree):
    done = lint(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Contracts: \d+ kept, 0 broken", done.stdout)


# (file in the installed shape, the import added, the contract whose name must show as broken)
FORBIDDEN = [
    (
        "levelfield/ground/stats.py",
        "import levelfield.checker.engine",
        "The ground floor imports no stage and no framework",
    ),
    (
        "levelfield/checker/checks/accuracy.py",
        "import levelfield.reference.harness.runner",
        "The harness, the checker and the tools never import each other",
    ),
    (
        "levelfield/reference/harness/trainer.py",
        "import torch",
        "The harness, the checker, the tools and the CLI's own modules import no",
    ),
    ("levelfield/rules/loader.py", "import levelfield.reference.datasets", "The rules import only the ground floor"),
    (
        "levelfield/reference/fmnist_resnet/common/metric.py",
        "import levelfield.reference.harness.trainer",
        "Task code (reference/ outside the harness) knows no stage",
    ),
    (
        "levelfield/tools/leaderboard/rows.py",
        "import levelfield.reference.ctr_dlrm.jax.implementation",
        "Of reference/, the checker and the tools import the datasets and the tasks'",
    ),
    ("levelfield/reference/harness/runner.py", "import levelfield.cli", "Nothing below the CLI imports it"),
]


@pytest.mark.parametrize("path, statement, contract", FORBIDDEN, ids=[f[0].split("/", 1)[1] for f in FORBIDDEN])
def test_a_forbidden_import_breaks_its_contract(tree, tmp_path, path, statement, contract):
    broken = tmp_path / "broken"
    shutil.copytree(tree, broken)
    module = broken / path
    module.write_text(module.read_text() + f"\n{statement}  # added by the test\n")
    done = lint(broken)
    assert done.returncode != 0
    _, _, broken_section = done.stdout.partition("Broken contracts")
    assert contract in broken_section, done.stdout


def test_task_modules_are_resolved_by_the_registry_only():
    """No module builds a `levelfield.reference.<task>` path from strings but the registry."""
    built = re.compile(r"""f["']levelfield\.reference\.\{""")
    offenders = [
        str(path.relative_to(REPO))
        for folder in package_dirs().values()
        for path in folder.rglob("*.py")
        if built.search(path.read_text()) and path.name != "registry.py"
    ]
    assert offenders == []
