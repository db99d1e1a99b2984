"""What every run of a training result says it is: one framework build, mode, device, precision, processes
and nodes, determinism settings, the framework version its own environment records, and the rules' quality metric;
and that its framework is one the rules name for training (TRN032).

A result's time to train is the olympic mean over its runs (TRN007 counts
them); the runs are one measurement only when they ran the same software on
the same hardware in the same way. TRN016 holds the recipe (the rules'
hyperparameter_log_keys) to the first run; this holds the rest of the header.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from levelfield.checker.checks.training import runs_after_first, training_logs, training_results
from levelfield.checker.findings import Finding, check
from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import MllogFile, same_value
from levelfield.ground.registry import FRAMEWORK_PACKAGES

if TYPE_CHECKING:
    from levelfield.checker.context import Context
    from levelfield.ground.submission.records import Submission

# The keys that say what ran a run; every run of a result must log the first run's values.
IDENTITY_KEYS = (
    LK.FRAMEWORK_VERSION,
    LK.COMPILE_MODE,
    LK.DETERMINISM,
    LK.DEVICE,
    LK.PRECISION,
    LK.WORLD_SIZE,
    LK.NODES,
)
# What an optional key's absence means: logs written before levelfield_nodes existed ran on one node.
ABSENT_MEANS = {LK.NODES: 1}
_PRODUCE = "run every run of a result with one `levelfield train` command, in one environment, unedited"


def _differs(found: object, want: object) -> bool:
    return not same_value(found, want, rel_tol=0.0)  # names and counts: exactly, and of one type


def _logged(log: MllogFile, key: str) -> tuple[object, int | None] | None:
    """(the key's first value, its line), (what its absence means, None) for an optional key, or None."""
    line = log.first(key)
    if line is not None:
        return line.value, line.lineno
    return (ABSENT_MEANS[key], None) if key in ABSENT_MEANS else None


def _framework_package_version(log: MllogFile, framework: str) -> tuple[object, int] | None:
    """(the framework's version in the log's environment packages, its line), or None where not recorded."""
    line = log.first(LK.ENVIRONMENT)
    package = FRAMEWORK_PACKAGES.get(framework, (None,))[0]  # the packages key: the import name
    env = line.value if line is not None else None
    packages = env.get("packages") if isinstance(env, dict) else None
    if package is None or not isinstance(packages, dict) or packages.get(package) is None:
        return None  # an unknown framework folder is STR's; an absent environment TRN001's
    return packages[package], line.lineno


@check("TRN020", "run-identity-mismatch", area="training")
def run_identity_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a run of a training result logs another levelfield_framework_version, levelfield_compile_mode,
    levelfield_determinism, levelfield_device, levelfield_precision, levelfield_world_size or
    levelfield_nodes than the result's first run; a log's levelfield_framework_version is not its
    levelfield_environment's version of that framework (packages[torch | tensorflow | jax]); its
    levelfield_determinism's mode is not its levelfield_compile_mode; or its levelfield_quality_metric is
    not the rules' metric.
    Absent values are TRN001's; a key the rules list in hyperparameter_log_keys (precision) is TRN016's;
    levelfield_determinism is optional (older logs lack it), and so is levelfield_nodes (absent: 1 node).
    Why: the olympic mean over a result's runs measures one system only when every run ran the same
    framework build, compiled or eager alike, with the same determinism switches and thread counts, on the
    same device, processes and nodes; a version that disagrees with the environment beside it, a mode
    that disagrees with itself, or another metric, means the log was edited or merged.
    Bad: result_2.txt logs levelfield_compile_mode "eager" where result_0.txt logs "compiled".
    Fix: train every run of a result with one command line (`levelfield train --runs N`) in one
    environment; submit the logs unedited.
    """
    recipe_keys = set(ctx.suite.hyperparameter_log_keys.values())  # compared by TRN016
    keys = [key for key in IDENTITY_KEYS if key not in recipe_keys]
    for training in training_results(sub):
        for first, log in runs_after_first(training):
            for key in keys:
                want, line = _logged(first, key), _logged(log, key)
                if want is not None and line is not None and _differs(line[0], want[0]):
                    yield Finding.at(
                        log.path,
                        f"{key} differs from the result's first run ({first.path})",
                        line=line[1],
                        found=line[0] if line[1] is not None else f"{line[0]} (not logged)",
                        expected=want[0],
                        hint=_PRODUCE,
                    )
    for training, log in training_logs(sub):
        line = log.first(LK.FRAMEWORK_VERSION)
        recorded = _framework_package_version(log, training.framework)
        if line is not None and recorded is not None and _differs(line.value, recorded[0]):
            package = FRAMEWORK_PACKAGES[training.framework][0]
            yield Finding.at(
                log.path,
                f"{LK.FRAMEWORK_VERSION} differs from {LK.ENVIRONMENT}'s packages[{package}] (line {recorded[1]})",
                line=line.lineno,
                found=line.value,
                expected=recorded[0],
                hint=_PRODUCE,
            )
        line, mode = log.first(LK.DETERMINISM), log.first(LK.COMPILE_MODE)
        recorded_mode = line.value.get("mode") if line is not None and isinstance(line.value, dict) else None
        if recorded_mode is not None and mode is not None and _differs(recorded_mode, mode.value):
            yield Finding.at(
                log.path,
                f"{LK.DETERMINISM}'s mode differs from {LK.COMPILE_MODE} (line {mode.lineno})",
                line=line.lineno,
                found=recorded_mode,
                expected=mode.value,
                hint=_PRODUCE,
            )
        line = log.first(LK.QUALITY_METRIC)
        want = ctx.task(training.task).quality["metric"]
        if line is not None and _differs(line.value, want):
            yield Finding.at(
                log.path,
                f"{LK.QUALITY_METRIC} differs from the rules' metric for {training.task}",
                line=line.lineno,
                found=line.value,
                expected=want,
                hint=_PRODUCE,
            )


@check("TRN032", "framework-serves-inference-only", area="training")
def framework_serves_inference_only(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a training result under a framework the rules name for inference only (rules 1.2:
    `inference_frameworks` lists onnxruntime, `frameworks`, the training frameworks, do not).
    Why: such a framework has no training code in levelfield (ONNX Runtime serves the weights the training
    frameworks trained), so a training log under its name was written by something else or renamed.
    Bad: results/box/fmnist-resnet/onnxruntime/training/result_0.txt.
    Fix: submit training results under the framework that trained (pytorch, tensorflow or jax), and ONNX
    Runtime's inference results beside them.
    """
    for training in sub.trainings:
        if training.framework in ctx.suite.frameworks:
            continue
        yield Finding.at(
            training.folder,
            f"a training result under {training.framework!r}, which rules {ctx.suite.version} name for inference only",
            found=training.framework,
            expected=f"one of {', '.join(ctx.suite.frameworks)}",
            hint="training results belong to the framework that trained; serve its weights with onnxruntime",
        )
