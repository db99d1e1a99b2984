"""What the device check runs: its steps, in which process, in which order, and what each is expected to cost.

    from levelfield.cli.device_check.plan import build_plan
    plan = build_plan(size="gpu", frameworks=["pytorch", "jax"])
    plan.processes()                  # ["pytorch", "jax", "equivalence"]: one process each, in this order

Each framework's steps run in one process of that framework (worker.py), through the harness's own APIs,
so its imports, device start-up and datasets are paid once; the cross-framework equivalence tests run
in one more process, pytest's, which must import every framework to compare them (pytest_steps.py). The
system description is taken by the check's own process, which imports no framework.

Order is priority within each process (a process whose share of the time limit runs out has done the
most telling steps first): one time-to-accuracy run (the trainer end to end, evaluation and the stop at
the target, on the device), then the LoadGen Offline and SingleStream runs of each standard task, cheapest
task first (each model's predict on the device, and the runner's sizing and LoadGen there), then the
standard tasks' training throughput, cheapest first, each precision its rules allow (fp32, then bf16)
before the next task. Training a standard model costs more than serving it (its step is forward, backward
and optimizer, compiled in one program) and the fp32 runs are what the first GPU run measured
(benchmarks/results/2026-11-27-device-check-h200/), so they come last and are the first cut.

`gpu` size runs the standard tasks (ResNet-50, BERT-base, DLRM) at the submission profile's batch;
`smoke` size, for a CPU (CI), runs the cheapest tiny task through the very same code at the smoke
profile, and one equivalence module: every kind of step in every framework in about two minutes of CPU
time on a 2-core CPU (the full-size models on a CPU are tests/test_standard_smoke.py's, at minutes a run).

ESTIMATE_S holds what each step is expected to take at each size: at `gpu` size on one H200, from the
first GPU run's step times less what one process per framework no longer pays per step (docs/scale.md,
"GPU paths", has the arithmetic); at `smoke` size on this project's 2-core CPU. The check shares its
time limit out among the processes by these estimates, and a worker does not start a step whose
estimate exceeds what is left of its share (budget.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from levelfield.rules import load_suite
from levelfield.rules.loader import Suite, Task

SIZES = ("gpu", "smoke")
FRAMEWORKS = ("pytorch", "tensorflow", "jax")
KINDS = ("sysinfo", "time_to_accuracy", "throughput", "inference", "equivalence")
CHECK_PROCESS = "check"  # the step the check's own process takes (sysinfo)
EQUIVALENCE_PROCESS = "equivalence"
# The time-to-accuracy run: the tiny task whose time to target is cheapest (about a second on this
# project's 2-core CPU, 0.3-0.8 s on an H200), at the submission profile at both sizes: a smoke profile's
# run stops before the target, and reaching it is what the step shows.
TTA_TASK = "ctr-dlrm"
TTA_PROFILE = "submission"
THROUGHPUT_PROFILE_BY_SIZE = {"gpu": "submission", "smoke": "smoke"}
INFERENCE_PROFILE = "smoke"  # LoadGen's minimums of a smoke run: the path works; the figure is no result
SMOKE_TASK = "ctr-dlrm"  # the smoke size's stand-in for the standard tasks
SEED = 1  # of every training run (one run each: the rules' count would time five)
# Timed steps of a throughput-only run: enough steady steps on a GPU for a median step time (10: half of
# the first GPU run's 20, which cost ResNet-50 in PyTorch 19 s of timed steps); one on a CPU (seconds
# each there, and the figure is not what the smoke check is for).
THROUGHPUT_STEPS_BY_SIZE = {"gpu": 10, "smoke": 1}
PRECISIONS = ("fp32", "bf16")  # what the check times where the task's rules allow it
SCENARIOS = ("offline", "singlestream")
# Compiled where compilation fits the check's minutes, eager otherwise, stated per step in the report.
# torch.compile of ResNet-50's and BERT-base's train step and predict takes minutes (on this project's CPU:
# 84 s and 113 s for ResNet-50, tests/test_standard_smoke.py), more than a 6-minute check can give them;
# jit is JAX's only way to run at speed, and its compilation of these models takes seconds to a minute.
EAGER = {
    ("image-resnet50-standard", "pytorch"): "torch.compile of ResNet-50 takes minutes",
    ("seq-transformer-standard", "pytorch"): "torch.compile of BERT-base takes minutes",
    ("image-resnet50-standard", "tensorflow"): "XLA's compilation of ResNet-50 takes minutes",
    ("seq-transformer-standard", "tensorflow"): "XLA's compilation of BERT-base takes minutes",
}
# The equivalence modules (tests/) per size, in order. On a GPU: a convolutional network (cuDNN's
# convolutions and batch norm, where TF32 would show first, and its bf16/fp16 tests), the BERT-sized
# encoder's matmuls and attention at its reduced size, then the recommender's embeddings and
# interactions; the other three repeat these kernels at other shapes. On a CPU (CI): the cheapest one.
EQUIVALENCE_MODULES = {
    "gpu": (
        "tests/test_equivalence_fmnist_resnet.py",
        "tests/test_equivalence_seq_transformer_standard.py",
        "tests/test_equivalence_ctr_dlrm.py",
    ),
    "smoke": ("tests/test_equivalence_ctr_dlrm.py",),
}
# pytest's -k at each size. On a GPU the compiled modes only: they call the same cuDNN and cuBLAS kernels
# under the same TF32 switches as the eager modes, plus the compilers' own choices (XLA's and Inductor's
# matmul precision, fusions), which are what could break fp32 equivalence on a GPU; the eager modes are
# compared on every CI run. The same selection at smoke size, so CI runs what the GPU runs.
EQUIVALENCE_SELECT = "not eager"

# Expected seconds per step (module docstring). GPU: one H200, one process per framework (docs/scale.md,
# "GPU paths": each is the first GPU run's time of that step less its process start, and less 10 of its
# 20 timed steps; inference and the processes' start are estimated there from their parts, never having
# run). TensorFlow never ran on a GPU: PyTorch's figures stand in for it. bf16 steps: fp32's.
# Smoke: the host CPU seconds each step took on this project's 2-core CPU (2026-11-28, a loaded machine
# whose wall times were 3-4x these), what it takes on the same machine idle; PyTorch's time-to-accuracy
# run is torch.compile's C++ build of the step and predict.
START_S = {
    "gpu": {"pytorch": 5, "jax": 5, "tensorflow": 8, EQUIVALENCE_PROCESS: 10},
    "smoke": {"pytorch": 4, "jax": 2, "tensorflow": 8, EQUIVALENCE_PROCESS: 10},
}
ESTIMATE_S = {
    "gpu": {
        ("time_to_accuracy", TTA_TASK): {"pytorch": 22, "jax": 6, "tensorflow": 22},
        ("offline", "ctr-dlrm-standard"): {"pytorch": 19, "jax": 57, "tensorflow": 19},
        ("singlestream", "ctr-dlrm-standard"): {"pytorch": 10, "jax": 12, "tensorflow": 10},
        ("offline", "image-resnet50-standard"): {"pytorch": 6, "jax": 34, "tensorflow": 6},
        ("singlestream", "image-resnet50-standard"): {"pytorch": 2, "jax": 11, "tensorflow": 2},
        ("offline", "seq-transformer-standard"): {"pytorch": 6, "jax": 42, "tensorflow": 6},
        ("singlestream", "seq-transformer-standard"): {"pytorch": 4, "jax": 22, "tensorflow": 4},
        ("throughput", "ctr-dlrm-standard"): {"pytorch": 27, "jax": 39, "tensorflow": 27},
        ("throughput", "image-resnet50-standard"): {"pytorch": 31, "jax": 35, "tensorflow": 31},
        ("throughput", "seq-transformer-standard"): {"pytorch": 14, "jax": 63, "tensorflow": 14},
        ("equivalence", "tests/test_equivalence_fmnist_resnet.py"): 45,
        ("equivalence", "tests/test_equivalence_seq_transformer_standard.py"): 30,
        ("equivalence", "tests/test_equivalence_ctr_dlrm.py"): 10,
    },
    "smoke": {
        ("time_to_accuracy", TTA_TASK): {"pytorch": 40, "jax": 6, "tensorflow": 9},
        ("offline", SMOKE_TASK): {"pytorch": 4, "jax": 7, "tensorflow": 8},
        ("singlestream", SMOKE_TASK): {"pytorch": 4, "jax": 1, "tensorflow": 1},
        ("throughput", SMOKE_TASK): {"pytorch": 1, "jax": 4, "tensorflow": 6},
        ("equivalence", "tests/test_equivalence_ctr_dlrm.py"): 25,
    },
}


@dataclass(frozen=True)
class Step:
    """One step of the check: what it runs, in which process, and what it is expected to cost."""

    id: str
    kind: str  # one of KINDS
    process: str  # a framework (its worker), EQUIVALENCE_PROCESS (pytest) or CHECK_PROCESS (the check itself)
    task: str | None = None
    framework: str | None = None
    profile: str | None = None
    precision: str | None = None
    scenario: str | None = None
    mode: str | None = None  # compiled | eager
    mode_reason: str | None = None
    timed_steps: int | None = None  # throughput: the timed optimizer steps
    module: str | None = None  # equivalence: the test module, relative to the checkout
    estimate_s: float | None = None


@dataclass(frozen=True)
class Plan:
    size: str
    rules_version: str
    frameworks: tuple[str, ...]
    steps: tuple[Step, ...]
    equivalence_frameworks: str | None = None  # LEVELFIELD_TEST_FRAMEWORKS of the equivalence process
    equivalence_select: str | None = None  # its pytest -k

    def processes(self) -> list[str]:
        """The child processes, in the order they run (every step's process but the check's own)."""
        names = []
        for step in self.steps:
            if step.process != CHECK_PROCESS and step.process not in names:
                names.append(step.process)
        return names

    def process_steps(self, process: str) -> list[Step]:
        return [step for step in self.steps if step.process == process]

    def process_estimate_s(self, process: str) -> float:
        """A process's start plus its steps' estimates: its weight when the time limit is shared out."""
        steps = sum(step.estimate_s or 0 for step in self.process_steps(process))
        return START_S[self.size].get(process, 0) + steps


def allowed_precisions(task: Task) -> list[str]:
    """The PRECISIONS the task's rules allow: its tunable choices, or its one fixed precision."""
    tunable = task.hyperparameters.get("tunable", {}).get("precision")
    if tunable:
        allowed = tunable.get("choices", [tunable.get("default")])
    else:
        allowed = [task.hyperparameters.get("fixed", {}).get("precision", "fp32")]
    return [p for p in PRECISIONS if p in allowed]


def _estimate(size: str, kind: str, task_or_module: str, framework: str | None = None) -> float | None:
    entry = ESTIMATE_S[size].get((kind, task_or_module))
    return entry if not isinstance(entry, dict) else entry.get(framework)


def _mode(size: str, task: str, framework: str) -> tuple[str, str | None]:
    reason = EAGER.get((task, framework)) if size == "gpu" else None
    return ("eager" if reason else "compiled"), reason


def framework_steps(size: str, framework: str, suite: Suite, tasks: list[str]) -> list[Step]:
    """One framework's steps in its process's order (module docstring)."""
    mode, reason = _mode(size, TTA_TASK, framework)
    steps = [
        Step(
            f"tta-{TTA_TASK}-{framework}",
            "time_to_accuracy",
            framework,
            task=TTA_TASK,
            framework=framework,
            profile=TTA_PROFILE,
            precision="fp32",
            mode=mode,
            mode_reason=reason,
            estimate_s=_estimate(size, "time_to_accuracy", TTA_TASK, framework),
        )
    ]
    for task_id in tasks:  # cheapest first; the scenarios of a task together, sharing one implementation
        mode, reason = _mode(size, task_id, framework)
        for scenario in SCENARIOS:
            steps.append(
                Step(
                    f"{scenario}-{task_id}-{framework}",
                    "inference",
                    framework,
                    task=task_id,
                    framework=framework,
                    profile=INFERENCE_PROFILE,
                    precision="fp32",
                    scenario=scenario,
                    mode=mode,
                    mode_reason=reason,
                    estimate_s=_estimate(size, scenario, task_id, framework),
                )
            )
    for task_id in tasks:
        mode, reason = _mode(size, task_id, framework)
        for precision in allowed_precisions(suite.task(task_id)):
            steps.append(
                Step(
                    f"throughput-{task_id}-{framework}-{precision}",
                    "throughput",
                    framework,
                    task=task_id,
                    framework=framework,
                    profile=THROUGHPUT_PROFILE_BY_SIZE[size],
                    precision=precision,
                    mode=mode,
                    mode_reason=reason,
                    timed_steps=THROUGHPUT_STEPS_BY_SIZE[size],
                    estimate_s=_estimate(size, "throughput", task_id, framework),
                )
            )
    return steps


def equivalence_steps(size: str) -> list[Step]:
    return [
        Step(
            "equivalence-" + module.rsplit("/", 1)[-1].removeprefix("test_equivalence_").removesuffix(".py"),
            "equivalence",
            EQUIVALENCE_PROCESS,
            module=module,
            estimate_s=_estimate(size, "equivalence", module),
        )
        for module in EQUIVALENCE_MODULES[size]
    ]


# The standard tasks by their expected cost on a GPU, cheapest first (ESTIMATE_S: DLRM, ResNet-50, BERT-base).
_GPU_TASK_ORDER = ("ctr-dlrm-standard", "image-resnet50-standard", "seq-transformer-standard")


def build_plan(
    size: str,
    frameworks: list[str],
    rules_version: str | None = None,
    rules_dir: str | None = None,
    kinds: tuple[str, ...] = KINDS,
) -> Plan:
    """Every step of the check of the given `kinds`, grouped by process, in priority order (module docstring)."""
    suite = load_suite(rules_version, rules_dir)
    standard = [t.id for t in suite.tasks.values() if t.size_class == "standard"]
    order = {task_id: i for i, task_id in enumerate(_GPU_TASK_ORDER)}
    tasks = sorted(standard, key=lambda t: (order.get(t, len(order)), t)) if size == "gpu" else [SMOKE_TASK]
    frameworks = [fw for fw in FRAMEWORKS if fw in frameworks]  # one order, whatever the caller's
    steps = [Step("sysinfo", "sysinfo", CHECK_PROCESS)]
    for framework in frameworks:
        steps += framework_steps(size, framework, suite, tasks)
    compared = len(frameworks) >= 2  # the tests compare frameworks pairwise
    if compared:
        steps += equivalence_steps(size)
    return Plan(
        size=size,
        rules_version=suite.version,
        frameworks=tuple(frameworks),
        steps=tuple(step for step in steps if step.kind in kinds),
        equivalence_frameworks=",".join(frameworks) if compared else None,
        equivalence_select=EQUIVALENCE_SELECT,
    )
