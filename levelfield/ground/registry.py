"""Which code serves which task (x framework), imported only when asked for.

    from levelfield.ground.registry import load_implementation, registered, task_module, task_package
    cls = load_implementation("ctr-dlrm", "jax")   # imports jax now, not before
    metric = task_module(task, "metric")           # reference/ctr_dlrm/common/metric.py (numpy only)
    task_package("ctr-dlrm")                       # "levelfield.reference.ctr_dlrm"

The registry is a naming convention, not a table to keep in sync: the
implementation of task T in framework F is the class `Implementation` in
`levelfield.reference.<T with _>.<F>.implementation`, and the task's
framework-neutral parts (`inputs`, `metric`, `model_spec`, `dataset`) are the
modules of `levelfield.reference.<T with _>.common`. This is the one place
those module paths are built, from the one converter of a task id to its
package (`task_package`); every stage asks here. Importing this module
(or the CLI, or the checker) never imports a framework.
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
    """The task's framework-neutral module `part` (one of COMMON_PARTS), numpy only.

    `task` is a task id or a rules Task. ValueError for a malformed id, an
    unknown part, or a task levelfield has no code for.
    """
    task_id = getattr(task, "id", task)
    if part not in COMMON_PARTS:
        raise ValueError(f"task part {part!r}: expected one of {', '.join(COMMON_PARTS)}")
    name = f"{task_package(task_id)}.common.{part}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            raise ValueError(f"task id {task_id!r}: no such task in levelfield.reference") from None
        raise


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
