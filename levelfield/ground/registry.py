"""Which code serves which task (x framework), imported only when asked for.

    from levelfield.ground.registry import load_implementation, registered, task_module, task_package
    cls = load_implementation("ctr-dlrm", "jax")       # imports jax now, not before
    metric = task_module(task, "metric")               # reference/ctr_dlrm/common/metric.py (numpy only)
    task_module("ctr-dlrm-standard", "metric")         # the same module: the task ctr-dlrm-standard reuses
    task_package("ctr-dlrm")                           # "levelfield.reference.ctr_dlrm"

The registry is a naming convention, not a table to keep in sync: the
implementation of task T in framework F is the class `Implementation` in
`levelfield.reference.<T with _>.<F>.implementation`, and the task's
framework-neutral parts (`inputs`, `metric`, `model_spec`, `dataset`, and where
rules 1.2 define a fidelity gate `fidelity`, `fidelity_reference`) are the
modules of `levelfield.reference.<T with _>.common`, or, for a part that folder
lacks, those of the task T reuses (`REUSES` in T's package): a standard task
reuses its family's tiny task's code at its own spec, with no file that only
re-exports. This is the one place those module paths are built, from the one
converter of a task id to its package (`task_package`); every stage asks
here. Importing this module (or the CLI, or the checker) never imports a
framework.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from levelfield.ground.errors import UserError

if TYPE_CHECKING:
    from levelfield.reference.interface import Implementation
    from levelfield.rules.loader import Suite, Task

# The import name and the distributions that provide each framework.
FRAMEWORK_PACKAGES = {
    "pytorch": ("torch", ["torch"]),
    "tensorflow": ("tensorflow", ["tensorflow", "tensorflow-cpu"]),
    "jax": ("jax", ["jax"]),
}


# The framework-neutral modules every task has under reference/<task>/common/.
COMMON_PARTS = ("inputs", "metric", "model_spec", "dataset")
# Those a task has where its rules define a fidelity gate (rules 1.2's standard tasks, ground/fidelity.py):
# the agreement metric (the runner and the checker score with it) and the reference weights and outputs
# (`levelfield fidelity`, the runner's weights).
FIDELITY_PARTS = ("fidelity", "fidelity_reference")
_TASK_ID = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


def task_package(task_id: str) -> str:
    """The package of a task's code: `fmnist-resnet` -> `levelfield.reference.fmnist_resnet`.

    The one converter from task id to package name: every module path of a task is built from it here,
    and any other stage that needs one asks here. ValueError for a malformed id.
    """
    if not isinstance(task_id, str) or not _TASK_ID.fullmatch(task_id):
        raise ValueError(f"task id {task_id!r}: expected a task id such as 'ctr-dlrm'")
    return f"levelfield.reference.{task_id.replace('-', '_')}"


def module_name(task_id: str, framework: str) -> str:
    """The module holding task_id's `Implementation` in `framework`."""
    return f"{task_package(task_id)}.{framework}.implementation"


def task_module(task: str | Task, part: str) -> ModuleType:
    """The task's framework-neutral module `part` (one of COMMON_PARTS or FIDELITY_PARTS), numpy only.

    `task` is a task id or a rules Task. A part the task's own `common/` lacks is the part of the task
    it reuses (`reused_task`): ctr-dlrm-standard's dataset, inputs and metric are ctr-dlrm's. ValueError
    for a malformed id, an unknown part, or a task levelfield has no code for.
    """
    task_id = getattr(task, "id", task)
    if part not in COMMON_PARTS + FIDELITY_PARTS:
        raise ValueError(f"task part {part!r}: expected one of {', '.join(COMMON_PARTS + FIDELITY_PARTS)}")
    asked, seen = task_id, []
    while task_id is not None and task_id not in seen:
        seen.append(task_id)
        name = f"{task_package(task_id)}.common.{part}"
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if not (e.name and name.startswith(e.name)):
                raise  # a module that the part itself imports is missing
        task_id = reused_task(task_id)
    looked = ", ".join(seen)
    raise ValueError(f"task id {asked!r}: levelfield.reference has no common/{part} for it (looked in: {looked})")


def reused_task(task_id: str) -> str | None:
    """The task whose code `task_id` reuses (a standard task: its family's tiny task), or None.

    A task's package names it in its `__init__.py` as `REUSES = "<task id>"`; its own code then holds only
    what differs (its `common/model_spec.py` with the `SPEC` that the reused task's network and
    implementations take, each framework's `implementation.py`, a subclass of the reused one), and
    `task_module` serves every other common part from the reused task. None for a task that reuses
    nothing or that levelfield has no package for.
    """
    try:
        package = importlib.import_module(task_package(task_id))
    except ModuleNotFoundError:
        return None
    return getattr(package, "REUSES", None)


def framework_version(framework: str) -> str | None:
    """Installed version of a framework from package metadata, without importing it."""
    from levelfield.ground.sysinfo import installed_version

    return installed_version(FRAMEWORK_PACKAGES[framework][1])


@dataclass(frozen=True)
class Entry:
    task: str
    framework: str
    module: str
    present: bool  # the implementation module exists
    framework_version: str | None  # None: the framework is not installed


def registered(suite: Suite) -> list[Entry]:
    """Every task x framework of the rules, with whether it can run here."""
    entries = []
    for task_id in suite.tasks:
        for framework in suite.frameworks:
            name = module_name(task_id, framework)
            try:
                present = importlib.util.find_spec(name) is not None
            except ModuleNotFoundError:
                present = False
            entries.append(Entry(task_id, framework, name, present, framework_version(framework)))
    return entries


def load_implementation(task_id: str, framework: str) -> type[Implementation]:
    """The Implementation class for task x framework; a clear error when it cannot be imported."""
    if framework not in FRAMEWORK_PACKAGES:
        raise UserError(f"unknown framework {framework!r} (expected one of: {', '.join(FRAMEWORK_PACKAGES)})")
    if framework_version(framework) is None:
        raise UserError(
            f"{framework} is not installed",
            hint=f"pip install 'levelfield[{framework}]' (on CPU-only machines install torch==2.13.0 first)",
        )
    name = module_name(task_id, framework)
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and (name == e.name or name.startswith(e.name + ".")):
            raise UserError(f"no {framework} implementation of {task_id} (expected module {name})") from None
        raise
    return module.Implementation
