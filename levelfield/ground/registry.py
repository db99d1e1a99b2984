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

Other distributions add implementations through the entry-point group
`levelfield.implementations` (`ground/plugins.py`, docs/plugins.md): a plugin's
task x framework is served here beside the built-ins, under a framework id of
its own, and is imported only when that row is asked for (`load_implementation`);
a built-in framework id always means levelfield's own code.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections import defaultdict
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from levelfield.ground.errors import UserError
from levelfield.ground.plugins import Declaration, declarations

if TYPE_CHECKING:
    from levelfield.reference.interface import Implementation
    from levelfield.rules.loader import Suite, Task

# The import name and the distributions that provide each framework.
FRAMEWORK_PACKAGES = {
    "pytorch": ("torch", ["torch"]),
    "tensorflow": ("tensorflow", ["tensorflow", "tensorflow-cpu"]),
    "jax": ("jax", ["jax"]),
    "onnxruntime": ("onnxruntime", ["onnxruntime", "onnxruntime-gpu"]),
}
# Frameworks whose implementations serve inference only (no train_steps): ONNX Runtime serves the weights
# the training frameworks trained (docs/inference.md, ONNX Runtime). The trainer refuses them.
INFERENCE_ONLY = ("onnxruntime",)


def training_refusal(framework: str) -> str | None:
    """Why `framework` cannot train, in one line (it serves inference only); None if it may."""
    if framework not in INFERENCE_ONLY:
        return None
    training = ", ".join(f for f in FRAMEWORK_PACKAGES if f not in INFERENCE_ONLY)
    return f"framework {framework!r} serves inference only; train with one of {training} and serve its weights"


# reference/null_model.py's FRAMEWORK: the harness alone, with no framework behind it.
NULL_FRAMEWORK = "none"
# Framework ids that always mean levelfield's own code: no plugin may declare one (docs/plugins.md).
BUILTIN_FRAMEWORKS = (*FRAMEWORK_PACKAGES, NULL_FRAMEWORK)
# Where the registry finds the interface a plugin's class is held to (imported by name, as task code is).
INTERFACE_MODULE = "levelfield.reference.interface"

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
    roles: tuple[str, ...] = ("training", "inference")  # what the rules name the framework for


def registered(suite: Suite) -> list[Entry]:
    """Every task x framework of the rules (training and inference frameworks), with what the rules name it
    for and whether it can run here."""
    entries = []
    for task_id in suite.tasks:
        for framework in suite.all_frameworks:
            name = module_name(task_id, framework)
            try:
                present = importlib.util.find_spec(name) is not None
            except ModuleNotFoundError:
                present = False
            roles = tuple(
                role
                for role, named in (("training", suite.frameworks), ("inference", suite.inference_frameworks))
                if framework in named
            )
            entries.append(Entry(task_id, framework, name, present, framework_version(framework), roles))
    return entries


def plugins() -> tuple[list[Declaration], list[tuple[str | None, str]]]:
    """The plugin declarations served (metadata only, nothing imported) and those refused, each refusal as
    (the framework id it concerns or None, one line saying why): a name that is not "<task>:<framework>", a
    built-in framework id (a plugin never hides or replaces levelfield's own code), or one framework id that
    two distributions declare (neither is served: a result's framework must name one distribution's code)."""
    served, refused = [], []
    by_framework: dict[str, list[Declaration]] = defaultdict(list)
    for declaration in declarations():
        if declaration.problem:
            refused.append((None, declaration.problem))
        elif declaration.framework in BUILTIN_FRAMEWORKS:
            own = (
                module_name(declaration.task, declaration.framework)
                if declaration.framework in FRAMEWORK_PACKAGES
                else "levelfield.reference.null_model"
            )
            refused.append(
                (
                    declaration.framework,
                    f"{declaration.where}: declares framework {declaration.framework!r}, which is levelfield's own "
                    f"({own}); refused: a plugin never hides or replaces a built-in, it takes a framework id of "
                    "its own",
                )
            )
        else:
            by_framework[declaration.framework].append(declaration)
    for framework, found in sorted(by_framework.items()):
        if len({d.distribution for d in found}) > 1:
            named = "; ".join(d.where for d in found)
            refused.append(
                (framework, f"framework {framework!r} is declared by more than one distribution ({named}); refused")
            )
        else:
            served.extend(found)
    return served, refused


def plugin(task_id: str, framework: str) -> Declaration | None:
    """The served plugin declaration of task_id x framework (nothing imported); None when no plugin declares
    it; UserError with the refusal's line when the declaration of `framework` was refused."""
    served, refused = plugins()
    for declaration in served:
        if (declaration.task, declaration.framework) == (task_id, framework):
            return declaration
    for concerned, line in refused:
        if concerned == framework:
            raise UserError(line)
    return None


def plugin_framework(framework: str) -> Declaration | None:
    """A served declaration of `framework` for any task (its distribution is the framework's), or None."""
    return next((d for d in plugins()[0] if d.framework == framework), None)


def admit_framework(
    suite: Suite, task_id: str, framework: str, division: str | None = None, kind: str = "framework"
) -> None:
    """UserError unless a run of task_id in `framework` may produce a result under `suite`: a framework the
    rules name for it (`kind`: "framework" for training, "inference_framework" for inference), or a plugin's
    in a division the rules admit plugins in (`plugin_divisions`; any of them when `division` is None, as
    for an inference run, which names none)."""
    if framework in suite.all_frameworks or framework in FRAMEWORK_PACKAGES:
        suite.check_id(kind, framework)  # a built-in the rules version may not name (for this kind) yet
        return
    declaration = plugin(task_id, framework)
    if declaration is None:
        served = sorted({d.framework for d in plugins()[0] if d.task == task_id})
        also = f"; or a plugin's for {task_id}: {', '.join(served)}" if served else ""
        raise UserError(f"unknown framework {framework!r} (expected one of: {', '.join(suite.frameworks)}{also})")
    admitted, named = suite.plugin_divisions, ", ".join(suite.frameworks)
    if not admitted:
        why = f"rules {suite.version} admit no plugin's framework in any division (only {named})"
    elif division is not None and division not in admitted:
        why = (
            f"the {division} division of rules {suite.version} admits only {named} "
            f"(a plugin's framework: the {' and '.join(admitted)} division)"
        )
    else:
        return
    raise UserError(f"framework {framework!r} is {declaration.where}; {why}", hint="docs/plugins.md, Divisions")


def load_implementation(task_id: str, framework: str) -> type[Implementation]:
    """The Implementation class for task x framework; a clear error when it cannot be imported.

    A built-in framework id is always levelfield's own code; any other is looked up among the plugins,
    whose class is imported now and held to the interface (one line naming the distribution when it
    fails to import or breaks the interface, never its traceback)."""
    if framework not in FRAMEWORK_PACKAGES:
        declaration = plugin(task_id, framework)
        if declaration is None:
            raise UserError(f"unknown framework {framework!r} (expected one of: {', '.join(FRAMEWORK_PACKAGES)})")
        return _load_plugin(declaration)
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


def _load_plugin(declaration: Declaration) -> type[Implementation]:
    """Import a plugin's class and hold it to the interface; UserError in one line naming the distribution."""
    try:
        cls = declaration.entry_point.load()
    except Exception as e:  # a plugin's import may raise anything: the user gets one line, not its traceback
        why = " ".join(f"{type(e).__name__}: {e}".split())
        raise UserError(
            f"{declaration.where}: failed to import: {why[:300]}",
            hint=f"fix or reinstall {declaration.distribution}, or uninstall it",
        ) from None
    problems = importlib.import_module(INTERFACE_MODULE).plugin_problems(cls, declaration.task, declaration.framework)
    if problems:
        raise UserError(
            f"{declaration.where}: breaks the Implementation interface: {'; '.join(problems)}",
            hint="docs/plugins.md states the interface and its version rule",
        )
    return cls
