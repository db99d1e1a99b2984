"""requirements.lock agrees with pyproject.toml and the Makefile's framework pins (levelfield/tools/lockfile.py).

    .venv/bin/python -m pytest tests/test_lockfile.py -q

No network: the committed lock is read as text. Each way of disagreeing is planted in a copy of the
lock or of pyproject.toml's data and must be reported; `make lock` (docs/packaging.md) mends the real one.
"""

from __future__ import annotations

import copy
import re
import tomllib

import pytest

from conftest import REPO
from levelfield.tools.lockfile import FRAMEWORKS, kept, lock_problems, parse_lock

LOCK_TEXT = (REPO / "requirements.lock").read_text()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def makefile_pins() -> list[str]:
    """The framework pins the Makefile installs, as the lock records them (CPU distribution names)."""
    text = (REPO / "Makefile").read_text()
    names = ("TORCH", "JAX", "TF", "ORT")
    version = {name: re.search(rf"^{name}_VERSION := (\S+)$", text, re.M)[1] for name in names}
    cpu = ("torch", "jax", "tensorflow-cpu", "onnxruntime")
    return [f"{distribution}=={version[name]}" for distribution, name in zip(cpu, names, strict=True)]


def test_the_committed_lock_agrees_with_pyproject_and_the_makefile():
    assert lock_problems(PYPROJECT, LOCK_TEXT, makefile_pins()) == []


def test_the_lock_is_read_whole():
    """Every entry has sha256 hashes and a requirer; the frameworks and the left-out list are in the header."""
    lock = parse_lock(LOCK_TEXT)
    assert len(lock.entries) == LOCK_TEXT.count("==") - len(lock.frameworks)  # every pin line is an entry
    assert {"numpy", "jsonschema", "mlcommons-loadgen", "flax", "optax", "pytest", "uv"} <= set(lock.entries)
    assert all(e.hashes and e.via for e in lock.entries.values())
    assert not FRAMEWORKS & set(lock.entries) and not set(lock.left_out) & set(lock.entries)
    assert {"keras", "triton"} <= set(lock.left_out)  # only TensorFlow, only PyPI's CUDA torch need them
    assert kept(lock.entries) == set(lock.entries)  # as uv resolved it: each reached from pyproject.toml


def _pyproject_with(dependency: str, replacing: str | None = None) -> dict:
    data = copy.deepcopy(PYPROJECT)
    deps = data["project"]["dependencies"]
    if replacing is not None:
        deps.remove(replacing)
    deps.append(dependency)
    return data


def _lock_with(extra: str) -> str:
    return LOCK_TEXT + extra


def _numpy_requirement() -> str:
    return next(d for d in PYPROJECT["project"]["dependencies"] if d.startswith("numpy"))


@pytest.mark.parametrize(
    ("pyproject", "lock", "pins", "expected"),
    [
        pytest.param(
            _pyproject_with("numpy>=99", replacing=_numpy_requirement()),
            LOCK_TEXT,
            None,
            "pyproject.toml dependencies: numpy>=99 does not admit the locked numpy==",
            id="specifier-moved-past-the-lock",
        ),
        pytest.param(
            _pyproject_with("leftpad>=1.0"),
            LOCK_TEXT,
            None,
            "pyproject.toml dependencies: leftpad>=1.0 is not in requirements.lock",
            id="new-dependency-not-locked",
        ),
        pytest.param(
            PYPROJECT,
            _lock_with("leftpad==1.0 \\\n    --hash=sha256:" + "0" * 64 + "\n    # via nothing-we-know\n"),
            None,
            "requirements.lock: leftpad==1.0 is required by nothing-we-know, none of which pyproject.toml reaches",
            id="unexplained-entry",
        ),
        pytest.param(
            PYPROJECT,
            _lock_with("torch==2.13.0 \\\n    --hash=sha256:" + "1" * 64 + "\n    # via levelfield (pyproject.toml)\n"),
            None,
            "requirements.lock: torch==2.13.0 is a framework; expected it out of the lock",
            id="framework-in-the-lock",
        ),
        pytest.param(
            PYPROJECT,
            _lock_with("leftpad==1.0\n    # via numpy\n"),
            None,
            "requirements.lock: leftpad==1.0 has no --hash",
            id="entry-without-hash",
        ),
        pytest.param(
            _pyproject_with("torch>=3", replacing=None),
            LOCK_TEXT,
            None,
            "pyproject.toml dependencies: torch>=3 does not admit the locked torch==2.13.0",
            id="framework-pin-outside-the-specifier",
        ),
        pytest.param(
            PYPROJECT,
            LOCK_TEXT,
            ["torch==2.14.0", *makefile_pins()[1:]],
            f"requirements.lock: resolved with frameworks {' '.join(makefile_pins())}, "
            "expected the Makefile's torch==2.14.0",
            id="makefile-pins-moved",
        ),
    ],
)
def test_a_disagreement_is_one_line_naming_it(pyproject, lock, pins, expected):
    problems = lock_problems(pyproject, lock, pins)
    assert any(p.startswith(expected) for p in problems), problems
    assert len(problems) == 1, problems


def test_a_removed_dependency_leaves_its_lock_entries_unexplained():
    """Dropping tabulate from pyproject.toml makes its locked entry one that nothing reaches."""
    data = copy.deepcopy(PYPROJECT)
    data["project"]["dependencies"] = [d for d in data["project"]["dependencies"] if not d.startswith("tabulate")]
    problems = lock_problems(data, LOCK_TEXT)
    assert [p.split(" is required by")[0] for p in problems] == [f"requirements.lock: tabulate=={_locked('tabulate')}"]


def _locked(name: str) -> str:
    return parse_lock(LOCK_TEXT).entries[name].version


def test_a_marker_for_another_platform_is_not_required(tmp_path):
    """pyproject's `tensorflow>=2.16; platform_machine != 'x86_64'` is not the lock's platform: no problem."""
    data = _pyproject_with("leftpad>=1.0; platform_machine != 'x86_64'")
    assert lock_problems(data, LOCK_TEXT) == []
