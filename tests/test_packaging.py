"""Installed, levelfield is one namespace with its rules as package data.

The repository shows generic folder names (tools/, checker/, rules/); the
wheel must map them under `levelfield.` so they never collide in site-packages.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, copy_sources


@pytest.fixture(scope="module")
def source_copy(tmp_path_factory) -> Path:
    # Building writes build/ and *.egg-info next to the sources: build from a copy, never in the checkout.
    return copy_sources(tmp_path_factory.mktemp("src") / "levelfield")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory, source_copy) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source_copy),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (path,) = out.glob("levelfield-*.whl")
    return path


def test_wheel_has_one_top_level_namespace(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"levelfield"}, top
    for generic in ("tools/", "checker/", "rules/", "reference/", "tests/"):
        assert not any(n.startswith(generic) for n in names), generic


def test_wheel_ships_rules_and_schemas_as_package_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = sorted(
        p.relative_to(REPO).as_posix() for p in (REPO / "rules").rglob("*") if p.suffix in (".yaml", ".json", ".jsonl")
    )
    assert shipped, "no rules files found in the checkout"
    for rel in shipped:
        assert f"levelfield/{rel.replace('rules/', 'rules/', 1)}" in names, rel


def test_extras_are_declared():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert set(extras) >= {"pytorch", "tensorflow", "jax", "gpu", "all", "dev"}
    assert any(dep.startswith("flax") for dep in extras["jax"]) and any(
        dep.startswith("optax") for dep in extras["jax"]
    )
    assert extras["gpu"] == ["nvidia-ml-py>=12.535"], "nvidia-ml-py, never the deprecated pynvml shim"
    assert project["scripts"]["levelfield"] == "levelfield.cli.main:main"
    assert not any(dep.split("[")[0].startswith(("torch", "tensorflow", "jax")) for dep in project["dependencies"])


@pytest.mark.slow
def test_fresh_install_works_outside_the_checkout(tmp_path, source_copy):
    """`pip install .` into a new environment: `import tools` fails, the CLI and its rules work."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = subprocess.run([*pip, str(source_copy)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    python, cli = str(venv / "bin/python"), str(venv / "bin/levelfield")
    for generic in ("tools", "checker", "rules", "reference"):
        imported = subprocess.run([python, "-c", f"import {generic}"], cwd="/", capture_output=True, text=True)
        assert imported.returncode != 0 and "ModuleNotFoundError" in imported.stderr, generic
    assert subprocess.run([cli, "--help"], cwd="/", capture_output=True).returncode == 0
    shown = subprocess.run([cli, "rules", "show"], cwd="/", capture_output=True, text=True)
    assert shown.returncode == 0 and "fmnist-resnet" in shown.stdout, shown.stderr
    located = subprocess.run(
        [python, "-c", "import levelfield.rules as r; print(r.__file__)"], cwd="/", capture_output=True, text=True
    )
    assert str(venv) in located.stdout, "the installed copy, not the checkout, must be imported"


def test_every_python_folder_is_in_the_wheel(wheel):
    """A new subpackage left out of setup.cfg would be missing from installs."""
    names = set(zipfile.ZipFile(wheel).namelist())
    mapping = {
        "levelfield": "levelfield",
        "rules": "levelfield/rules",
        "reference": "levelfield/reference",
        "checker": "levelfield/checker",
        "tools": "levelfield/tools",
    }
    for folder, installed in mapping.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.relative_to(REPO / folder).as_posix()
            assert f"{installed}/{rel}" in names, f"{folder}/{rel} is not packaged; add it to setup.cfg"
