"""Where framework code meets the harness: one class per task x framework.

    from levelfield.ground.registry import load_implementation
    from levelfield.reference.interface import Recipe
    cls = load_implementation("fmnist-resnet", "pytorch")
    impl = cls(Recipe.from_task(task), mode="compiled")
    impl.load(init_weights(seed))                          # neutral names and layouts
    impl.set_train_data(inputs, labels)                    # into framework/device memory
    losses = impl.train_steps(batch_indices, learning_rates)
    outputs = impl.predict(eval_inputs)

Framework code knows nothing of LoadGen, MLLOG or rules files: it receives a
`Recipe` (numbers already read from rules), numpy arrays, the batch order and
one learning rate per step, all computed once in numpy by the harness
(`reference/schedule.py`) so every framework sees exactly the same ones. The
harness knows nothing of any framework: it only calls these methods.

Other distributions implement the same class for a framework id of their own
(plugins, docs/plugins.md): they state the `INTERFACE_VERSION` they were
written against, and the registry holds them to it (`plugin_problems`).

Weights cross the boundary in one framework-neutral form: a dict of float32
numpy arrays with the names and layouts that `reference/<task>/common/model_spec.py`
documents (conv kernels HWIO, dense kernels [in, out]). Each framework's
`weights.py` maps them to its own parameters and back.
"""

from __future__ import annotations

import abc
import importlib
import platform
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from levelfield.ground.accelerators import query_nvml
from levelfield.ground.sysinfo import cpuinfo_text, parse_cpuinfo

if TYPE_CHECKING:
    from levelfield.rules.loader import Task

# The version of the `Implementation` interface below that this levelfield drives. A plugin (docs/plugins.md)
# states the version it was written against as its class's own `interface_version`; the registry refuses a
# plugin whose version differs, naming both. The version goes up when a class written against the previous
# one could break or mean something else under the new harness: an abstract method added, removed or renamed;
# a method's arguments, return shape, dtype or units changed; a class attribute read with another meaning;
# what the harness calls, in which order or on which thread changed. It stays when every class written for it
# still works unchanged: a new method or class attribute with a default, a new optional keyword argument.
# The built-in implementations live in this tree and move with it, so they declare nothing.
INTERFACE_VERSION = 1

COMPILED = "compiled"  # torch.compile, tf.function(jit_compile=True), jax.jit
EAGER = "eager"  # the framework's eager mode, for debugging and comparison
MODES = (COMPILED, EAGER)


@dataclass(frozen=True)
class Recipe:
    """The training recipe of one run: closed-division fixed values plus the tunable ones chosen."""

    global_batch_size: int
    learning_rate: float
    warmup_epochs: float
    fixed: dict = field(default_factory=dict)  # optimizer, momentum, weight_decay, loss, ... from rules
    # Tunable choices by name (rules 1.1 fmnist-resnet: precision), as chosen; a name is here or in `fixed`.
    named: dict = field(default_factory=dict)

    @classmethod
    def from_task(cls, task: Task, **overrides: object) -> Recipe:
        """Rules defaults for `task` (a levelfield.rules.Task); `overrides` set tunable values. A task seen
        through a profile (`Task.for_profile`) may carry that profile's own default global batch."""
        specs = task.hyperparameters["tunable"]
        tunable = {name: spec["default"] for name, spec in specs.items()}
        if "global_batch_size" in task.training:  # rules 1.1 smoke profiles of the standard tasks
            tunable["global_batch_size"] = task.training["global_batch_size"]
        unknown = set(overrides) - set(tunable)
        if unknown:
            raise ValueError(f"not tunable in {task.id}: {', '.join(sorted(unknown))}")
        tunable.update(overrides)
        named = {name: value for name, value in tunable.items() if isinstance(specs[name]["default"], str)}
        for name, value in named.items():
            # A name has no nearby value to round to: one the rules do not list is refused here (open
            # division too), while numbers are judged by the checker (closed division only).
            if value not in specs[name]["choices"]:
                raise ValueError(f"{name}: expected one of {', '.join(specs[name]['choices'])}, got {value!r}")
        try:
            return cls(
                global_batch_size=int(tunable["global_batch_size"]),
                learning_rate=float(tunable["learning_rate"]),
                warmup_epochs=float(tunable.get("warmup_epochs", 0)),
                fixed=dict(task.hyperparameters["fixed"]),
                named=named,
            )
        except ValueError as e:  # a name where a number belongs (--set learning_rate=fast)
            raise ValueError(f"expected numbers for the numeric tunables: {e}") from None

    @property
    def precision(self) -> str:
        """fp32, bf16 or fp16 (rules 1.1 fmnist-resnet's choices), fixed or chosen; fp32 where the rules predate it."""
        return self.named.get("precision", self.fixed.get("precision", "fp32"))

    def with_precision(self, precision: str) -> Recipe:
        """The same recipe computing in `precision` (an inference run's choice, `levelfield infer --precision`:
        rules 1.2's inference.precisions); the implementation refuses one its code does not run."""
        return replace(self, named={**self.named, "precision": precision})

    def as_dict(self) -> dict:
        """Every hyperparameter by its rules name, for logs and for the closed-division check."""
        return {
            **self.fixed,
            "global_batch_size": self.global_batch_size,
            "learning_rate": self.learning_rate,
            "warmup_epochs": self.warmup_epochs,
            **self.named,
        }


class Implementation(abc.ABC):
    """One task in one framework. Subclasses live in reference/<task>/<framework>/implementation.py."""

    task_id: ClassVar[str]
    framework: ClassVar[str]
    # The fixed recipe choices the code is written for (rules names -> values); any other recipe is refused.
    implements: ClassVar[dict] = {}
    # The precisions the code runs (Recipe.precision: fp32; bf16, fp16 = mixed with float32 master weights); any
    # other is refused.
    precisions: ClassVar[tuple[str, ...]] = ("fp32",)
    # Device types ("cpu", "cuda") on which N processes (`levelfield train --nproc N`) train the same
    # model as one process; empty: one process only.
    multiprocess_devices: ClassVar[tuple[str, ...]] = ()
    # Batch norm over several processes, by device type: "global" (statistics of the whole global batch,
    # synchronised) or "per_process" (each rank's share, as MLPerf's ResNet allows); the trainer logs the
    # span as model_bn_span and the task's rules list the spans they allow. Empty: no batch norm.
    batch_norm_spans: ClassVar[dict[str, str]] = {}
    # Workers of an input pipeline that runs inside train_steps (image-resnet50-standard: crop, flip and
    # normalise per step, timed as in MLPerf), a system setting the trainer logs as levelfield_input_workers;
    # None: the task has no such pipeline (its training set sits in framework memory as given).
    input_workers: int | None = None
    # False: the class serves inference only (a plugin may declare so, docs/plugins.md); `levelfield train`
    # refuses it before anything runs, so its set_train_data and train_steps are never called.
    trains: ClassVar[bool] = True

    def __init__(self, recipe: Recipe, *, mode: str = COMPILED, device: str | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        refusal = self.refusal(recipe)
        if refusal:
            raise ValueError(refusal)
        self.recipe = recipe
        self.mode = mode
        self.device = device  # subclasses resolve None to their best device and store its name

    @classmethod
    def device_refusal(cls, device: str | None) -> str | None:
        """Why this framework cannot compute on `device` (`--device`) here, in one line; None if it can (and
        for None, the framework's own choice). The trainer and the runner ask before anything is written."""
        if device is None:
            return None
        if cls.framework not in DEVICE_RESOLVERS:  # a plugin's framework: it overrides this to accept --device
            return f"{cls.task_id}/{cls.framework} maps no --device name to a device of its own; leave --device out"
        module, function = DEVICE_RESOLVERS[cls.framework]
        try:
            getattr(importlib.import_module(module), function)(device)
        except DeviceUnavailable as e:
            return str(e)
        return None

    @classmethod
    def refusal(cls, recipe: Recipe) -> str | None:
        """Why this implementation cannot run `recipe`, in one line; None if it can. The trainer asks before
        the first run, so a user's --set precision=... fails at once with the reason."""
        values = recipe.as_dict()
        asked = {name: values.get(name) for name in cls.implements}
        if asked != cls.implements:
            return f"{cls.task_id}/{cls.framework} implements {cls.implements}, the recipe asks for {asked}"
        if recipe.precision not in cls.precisions:
            return (
                f"{cls.task_id}/{cls.framework} runs precision {', '.join(cls.precisions)}, "
                f"the recipe asks for {recipe.precision}"
            )
        return None

    @property
    def name(self) -> str:
        return f"{self.task_id}/{self.framework}"

    @abc.abstractmethod
    def version(self) -> str:
        """The framework's version string, e.g. torch.__version__."""

    # -- weights, in the neutral names and layouts of common/model_spec.py ----------
    @abc.abstractmethod
    def load(self, weights: dict[str, np.ndarray]) -> None:
        """Set every parameter (and buffer) from neutral weights; resets the optimizer state."""

    @abc.abstractmethod
    def export(self) -> dict[str, np.ndarray]:
        """Every parameter (and buffer) as neutral float32 numpy arrays."""

    # -- inference --------------------------------------------------------------
    @abc.abstractmethod
    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Model outputs (logits) for a batch, in inference mode; float32 numpy."""

    # -- training ---------------------------------------------------------------
    @abc.abstractmethod
    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        """Place the whole training set in framework (device) memory; called during init, untimed."""

    @abc.abstractmethod
    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        """Run len(batch_indices) optimizer steps.

        batch_indices: int64 [steps, global_batch_size], rows of the training set per step; with
            N processes, this process's [steps, global_batch_size / N] share of each step.
        learning_rates: float64 [steps], the learning rate of each step.
        Returns the float32 [steps] training loss of each step (before its update).
        """

    @abc.abstractmethod
    def determinism_settings(self) -> dict:
        """The switches that decide whether a rerun repeats this run bit for bit, as the framework reports
        them now: `determinism_record(self.mode, ...)` from the framework's steps module
        (reference/frameworks/<framework>/steps.py). The trainer logs it once per run."""

    def peak_device_memory_mib(self) -> float | None:
        """Peak memory the framework allocated on its accelerator since this implementation was built (each
        run builds its own), MiB; None on a CPU."""
        return None

    def hyperparameters(self) -> dict:
        """The hyperparameters this implementation actually configured, by rules name (valid after load()).

        Subclasses read them back from their optimizer/loss objects where the
        framework allows, so a test can compare them with the rules.
        """
        return self.recipe.as_dict()


def plugin_problems(cls: object, task_id: str, framework: str) -> list[str]:
    """Why `cls`, a plugin's class registered as task_id x framework, breaks this interface; [] when it does not.

    A plugin's class (docs/plugins.md) subclasses `Implementation`, states the `interface_version` it was
    written against (in its body or a base class of its own; `Implementation` states none, so a class
    never inherits the current version unawares), implements every abstract method, names the task and
    framework its entry point names, and leaves `name` as it is (the harness and every result file read
    "<task_id>/<framework>"). Each problem is one phrase; the registry joins them into one line naming
    the plugin's distribution.
    """
    if not isinstance(cls, type) or not issubclass(cls, Implementation):
        return [f"{cls!r} is not a subclass of {__name__}.Implementation"]
    problems = []
    declared = next((c.__dict__["interface_version"] for c in cls.__mro__ if "interface_version" in c.__dict__), None)
    if declared is None:
        problems.append(f"declares no interface_version (this levelfield drives interface version {INTERFACE_VERSION})")
    elif declared != INTERFACE_VERSION:
        problems.append(
            f"written against interface version {declared!r}, this levelfield drives version {INTERFACE_VERSION}"
        )
    if cls.__abstractmethods__:
        problems.append(f"does not implement {', '.join(sorted(cls.__abstractmethods__))}")
    for attribute, expected in (("task_id", task_id), ("framework", framework)):
        found = getattr(cls, attribute, None)
        if found != expected:
            problems.append(f"its {attribute} is {found!r}, its entry point names {expected!r}")
    if cls.name is not Implementation.name:
        problems.append("overrides name (the harness reads '<task_id>/<framework>')")
    return problems


def determinism_record(
    mode: str, framework: dict[str, object], threads: dict[str, int], device: dict[str, object]
) -> dict:
    """The one shape of `levelfield_determinism` (rules/schemas/mllog-training-line.schema.json), for every
    framework: the compile mode, the framework's own determinism and precision switches by its names (TF32
    among them), its CPU thread counts by its names (what it reports; 0 is TensorFlow's "chosen at run
    time"), and the device it computes on (`device_record`)."""
    return {"mode": mode, "framework": dict(framework), "threads": dict(threads), "device": dict(device)}


DEVICE_KINDS = ("cpu", "cuda")


# Each framework's mapping of the neutral names to its own device (module, function), imported when asked.
DEVICE_RESOLVERS = {
    "pytorch": ("levelfield.reference.frameworks.pytorch.parallel", "torch_device"),
    "tensorflow": ("levelfield.reference.frameworks.tensorflow.parallel", "tf_device"),
    "jax": ("levelfield.reference.frameworks.jax.parallel", "local_device"),
    "onnxruntime": ("levelfield.reference.frameworks.onnxruntime.session", "ort_device"),
}


class DeviceUnavailable(ValueError):
    """`--device` names no device of this kind, or one this framework does not see here (the harness turns
    it into one line for the user)."""


def parse_device(requested: str) -> tuple[str, int | None]:
    """`--device`'s framework-neutral names: "cpu", "cuda" (the process's current GPU) or "cuda:N".

    Returns (kind, index or None); ValueError naming the value and what is expected otherwise. Each
    framework maps the pair to its own device (torch_parallel.torch_device, jax_parallel.local_device,
    tf_parallel.tf_device).
    """
    kind, sep, index = requested.partition(":")
    if kind in DEVICE_KINDS and (not sep or (kind == "cuda" and index.isdigit())):
        return kind, int(index) if sep else None
    raise DeviceUnavailable(f"device {requested!r}: expected cpu, cuda or cuda:N (N a GPU's index)")


def device_record(
    kind: str, name: str | None, count: int, cuda_runtime: str | None, cudnn: str | None, nccl: str | None
) -> dict:
    """The device a framework computes on, as the framework reports it, with the driver from NVML.

    `kind` is "cuda" or "cpu"; `count` the devices of that kind the framework sees. On a CPU the name is
    the processor's model (/proc/cpuinfo) and the CUDA fields are None. The CUDA runtime, cuDNN and NCCL
    versions are the ones the framework was built with or loaded (None where it does not say).
    """
    if kind == "cuda":
        driver = query_nvml()["driver_version"]
    else:
        driver = None
        name = name or parse_cpuinfo(cpuinfo_text())["model_name"] or platform.processor() or None
    return {
        "kind": kind,
        "name": name,
        "count": int(count),
        "driver": driver,
        "cuda_runtime": cuda_runtime,
        "cudnn": cudnn,
        "nccl": nccl,
    }
