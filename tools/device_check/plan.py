"""What the device check runs: a list of steps built from the rules and the frameworks present.

    from levelfield.tools.device_check.plan import build_plan
    steps = build_plan(size="gpu", frameworks=["pytorch", "jax"], rules_version="1.1")

Order is priority: a check that reaches its time limit has done the most telling steps first: the system
description, the cheap time-to-accuracy runs, the standard tasks' training throughput, the equivalence
tests (fp32 on the device, TF32 off), then the LoadGen Offline and SingleStream runs.

`gpu` size runs the standard tasks (ResNet-50, BERT-base, DLRM) at the submission profile's batch;
`smoke` size, for a CPU (CI), runs the cheapest tiny task through the very same commands at the smoke
profile, and one equivalence module instead of three: every kind of step and every framework, in about
three minutes on a 2-core CPU (the full-size models on a CPU are tests/test_standard_smoke.py's, at
minutes a run).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from levelfield.rules import load_suite
from levelfield.rules.loader import Task

SIZES = ("gpu", "smoke")
FRAMEWORKS = ("pytorch", "tensorflow", "jax")
# The time-to-accuracy run: the tiny task whose time to target is cheapest (about a second on this
# project's 2-core CPU), at the submission profile at both sizes: a smoke profile's run stops before the
# target, and reaching it is what the step shows.
TTA_TASK = "ctr-dlrm"
PROFILE_BY_SIZE = {"gpu": "submission", "smoke": "smoke"}  # of the throughput-only runs
SMOKE_TASK = "ctr-dlrm"  # the smoke size's stand-in for the standard tasks
MODE_FLAGS = {"compiled": "--compile", "eager": "--eager"}
# Timed steps of a throughput-only run: enough steady steps for a median on a GPU; one on a CPU (each is
# seconds there, and the figure is not what the smoke check is for).
THROUGHPUT_STEPS_BY_SIZE = {"gpu": 20, "smoke": 1}
PRECISIONS = ("fp32", "bf16")  # what the check times where the task's rules allow it
SCENARIOS = ("offline", "singlestream")
# Compiled where compilation fits the check's minutes, eager otherwise, stated per step in the report.
# torch.compile of ResNet-50's and BERT-base's train step and predict takes minutes (on this project's CPU:
# 84 s and 113 s for ResNet-50, tests/test_standard_smoke.py), more than a 6-minute check can give each
# of six runs; jit is JAX's only way to run at speed, and its compilation of these models takes seconds.
EAGER = {
    ("image-resnet50-standard", "pytorch"): "torch.compile of ResNet-50 takes minutes",
    ("seq-transformer-standard", "pytorch"): "torch.compile of BERT-base takes minutes",
    ("image-resnet50-standard", "tensorflow"): "XLA's compilation of ResNet-50 takes minutes",
    ("seq-transformer-standard", "tensorflow"): "XLA's compilation of BERT-base takes minutes",
}
# The equivalence modules (tests/) per size. On a GPU: a convolutional network (cuDNN's convolutions and
# batch norm, where TF32 would show first), the BERT-sized encoder's matmuls and attention at its reduced
# size, and the recommender's embeddings and interactions; the other three repeat these kernels at other
# shapes and cost minutes of compilation a 6-minute check does not have. On a CPU (CI): the cheapest one.
EQUIVALENCE_MODULES = {
    "gpu": (
        "tests/test_equivalence_fmnist_resnet.py",
        "tests/test_equivalence_seq_transformer_standard.py",
        "tests/test_equivalence_ctr_dlrm.py",
    ),
    "smoke": ("tests/test_equivalence_ctr_dlrm.py",),
}


KINDS = ("sysinfo", "time_to_accuracy", "throughput", "equivalence", "inference")


@dataclass(frozen=True)
class Step:
    """One child process of the check: `args` after `python -m` (levelfield's CLI, or pytest)."""

    id: str
    kind: str  # sysinfo | time_to_accuracy | throughput | inference | equivalence
    args: tuple[str, ...]
    task: str | None = None
    framework: str | None = None
    precision: str | None = None
    scenario: str | None = None
    mode: str | None = None  # compiled | eager
    mode_reason: str | None = None
    env: dict = field(default_factory=dict)


def allowed_precisions(task: Task) -> list[str]:
    """The PRECISIONS the task's rules allow: its tunable choices, or its one fixed precision."""
    tunable = task.hyperparameters.get("tunable", {}).get("precision")
    if tunable:
        allowed = tunable.get("choices", [tunable.get("default")])
    else:
        allowed = [task.hyperparameters.get("fixed", {}).get("precision", "fp32")]
    return [p for p in PRECISIONS if p in allowed]


def build_plan(
    size: str, frameworks: list[str], rules_version: str | None = None, kinds: tuple[str, ...] = KINDS
) -> list[Step]:
    """Every step of the check of the given `kinds`, in priority order (module docstring)."""
    suite = load_suite(rules_version)
    version = ("--rules-version", suite.version)
    profile = PROFILE_BY_SIZE[size]
    standard = sorted(t.id for t in suite.tasks.values() if t.size_class == "standard")
    tasks = standard if size == "gpu" else [SMOKE_TASK]
    steps = [Step("sysinfo", "sysinfo", ("levelfield", "sysinfo", "--out", "{out}/system.json"))]
    tta = TTA_TASK
    for fw in frameworks:
        steps.append(
            Step(
                f"tta-{tta}-{fw}",
                "time_to_accuracy",
                ("levelfield", "train", "--task", tta, *version, "--framework", fw, "--profile", "submission")
                + ("--runs", "1", "--seed", "1", "--out", "{out}/runs/{id}"),
                task=tta,
                framework=fw,
                precision="fp32",
                mode="compiled",
            )
        )
    for task_id in tasks:
        for fw in frameworks:
            reason = EAGER.get((task_id, fw)) if size == "gpu" else None
            mode = "eager" if reason else "compiled"
            for precision in allowed_precisions(suite.task(task_id)):
                steps.append(
                    Step(
                        f"throughput-{task_id}-{fw}-{precision}",
                        "throughput",
                        ("levelfield", "train", "--task", task_id, *version, "--framework", fw, "--profile", profile)
                        + (MODE_FLAGS[mode], "--runs", "1", "--seed", "1", "--throughput-only")
                        + ("--steps", str(THROUGHPUT_STEPS_BY_SIZE[size]), "--out", "{out}/runs/{id}")
                        + (("--set", f"precision={precision}") if precision != "fp32" else ()),
                        task=task_id,
                        framework=fw,
                        precision=precision,
                        mode=mode,
                        mode_reason=reason,
                    )
                )
    if len(frameworks) >= 2:
        steps.append(
            Step(
                "equivalence",
                "equivalence",
                ("pytest", "-q", "-p", "no:cacheprovider", "--junitxml", "{out}/equivalence.xml")
                + EQUIVALENCE_MODULES[size],
                env={"LEVELFIELD_TEST_FRAMEWORKS": ",".join(frameworks)},
            )
        )
    for scenario in SCENARIOS:
        for task_id in tasks:
            for fw in frameworks:
                reason = EAGER.get((task_id, fw)) if size == "gpu" else None
                mode = "eager" if reason else "compiled"
                steps.append(
                    Step(
                        f"{scenario}-{task_id}-{fw}",
                        "inference",
                        ("levelfield", "infer", "--task", task_id, *version, "--framework", fw, MODE_FLAGS[mode])
                        + ("--scenario", scenario, "--mode", "performance", "--profile", "smoke", "--quiet")
                        + ("--out", "{out}/runs/{id}"),
                        task=task_id,
                        framework=fw,
                        precision="fp32",
                        scenario=scenario,
                        mode=mode,
                        mode_reason=reason,
                    )
                )
    return [step for step in steps if step.kind in kinds]
