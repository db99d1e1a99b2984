"""The LoadGen scenario runner behind `levelfield infer`: one harness for every task x framework.

    from levelfield.harness.options import InferOptions
    from levelfield.harness.runner import infer
    result = infer(InferOptions(task_id="ctr-dlrm", framework="jax", scenario="offline",
                                mode="performance", out=Path("runs/ctr-jax-offline"), profile="smoke"))

Steps: read the rules and the user's overrides (a typo fails here, before any
framework is imported), build the implementation, then hand the model to one
compute thread (session.py) that loads the weights, measures what a batch
costs on this system and sizes LoadGen from it (sizing.py), warms up every
batch shape (compilation happens before LoadGen's clock starts; reported as
`warmup_s`) and runs LoadGen: performance mode the profile's repeats into
`run_<i>/`, accuracy mode once into `out`. The SUT answers with
`impl.predict`'s outputs turned into the task's response rows
(`model_spec.to_response`). The runner adds `settings.json` (the exact
settings, with the measured batch costs and the sizes chosen), `result.json`
(`"status": "completed"`, every repeat's metric with its unit and LoadGen's
verdict and reasons, their mean, stdev and 95% CI, fingerprints) and, in
accuracy mode, `accuracy.json` (the task's metric over mlperf_log_accuracy.json,
against the rules' threshold).

Framework `none` (reference/null_model.py) runs the harness with a model of a
chosen cost instead of a framework; its results are never submittable.

Interrupts: LoadGen's StartTest blocks in C++ and cannot be stopped, so the
main thread only waits, draws the progress bar and takes SIGINT / SIGTERM. An
interrupted or failed run leaves result.json with `"status": "aborted"` (or
`"failed"`), the reason and the phase, and no metric; accuracy.json is removed.
`infer` then raises `InferAborted`; when the compute thread is still busy
(inside LoadGen, or a predict) the process must end (the CLI exits with 128 +
signal).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import atomic_write_text, sha256_file
from levelfield.ground.registry import task_module
from levelfield.harness import loadgen_config
from levelfield.harness import sut as sut_module
from levelfield.harness.options import InferOptions
from levelfield.harness.run_state import InferAborted, RunState, abandoned_work_running
from levelfield.reference.interface import Implementation, Recipe
from levelfield.reference.null_model import FRAMEWORK as NULL_FRAMEWORK
from levelfield.reference.null_model import NullImplementation

if TYPE_CHECKING:  # annotations only: rules objects come from cached_suite
    from levelfield.rules import Suite, Task

INIT_WEIGHTS_SEED = 0  # without --weights the runner measures the seed-0 initial model
# Files and folders one run writes into --out; a second run refuses to touch them without --force.
OUTPUT_FILES = (
    "result.json",
    "accuracy.json",
    "settings.json",
    "mlperf_log_summary.txt",
    "mlperf_log_detail.txt",
    "mlperf_log_accuracy.json",
    "mlperf_log_trace.json",
)
RUN_FOLDERS = "run_*"
# How often the main thread wakes while the compute thread works: progress bar, signals, SUT errors.
POLL_S = 0.2
EXIT_FAILED = 1
SUT_KINDS = ("fast", "plain")  # LoadGen's ConstructFastSUT / ConstructSUT


class RunInterrupted(BaseException):
    """SIGINT or SIGTERM arrived; BaseException so no `except Exception` in framework code swallows it."""


class _SignalTrap:
    """SIGINT / SIGTERM raise RunInterrupted in the main thread, once; a second signal ends the process."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.signal_name: str | None = None
        self.previous: dict = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():  # signal.signal works there only
            self.previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def _handle(self, signum, frame):
        if self.signal_name is not None:  # impatient user: the abort is being recorded; stop now
            os._exit(128 + signum)
        self.signal_name = signal.Signals(signum).name
        raise RunInterrupted(self.signal_name)

    def exit_code(self) -> int:
        return 128 + getattr(signal, self.signal_name).value

    def __exit__(self, *exc):
        for s, handler in self.previous.items():
            signal.signal(s, handler)
        return False


def _prepare_out(out: Path, force: bool) -> None:
    existing = [name for name in OUTPUT_FILES if (out / name).exists()] + sorted(
        p.name for p in out.glob(RUN_FOLDERS) if p.is_dir()
    )
    if existing and not force:
        raise UserError(
            f"{out}: already holds {', '.join(existing)}; not overwriting them",
            hint="choose another --out, or pass --force to replace them",
        )
    out.mkdir(parents=True, exist_ok=True)
    for name in existing:  # no stale log from an earlier run may survive next to the new one
        path = out / name
        if path.is_dir():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()
        else:
            path.unlink()


@functools.lru_cache(maxsize=4)
def cached_suite(rules_version: str | None, rules_dir: str | None) -> Suite:
    """The rules, parsed once per process: tests and benchmarks run many scenarios in one process
    (parsing and validating the YAML takes ~0.4 s); a CLI run reads them once anyway."""
    from levelfield.rules import load_suite

    return load_suite(rules_version, rules_dir)


@functools.lru_cache(maxsize=2)
def cached_eval_set(
    rules_version: str | None, rules_dir: str | None, task_id: str, data_dir: str | None, n_eval: int
) -> tuple[dict, object]:
    """(model inputs, labels) of the first n_eval eval rows, read-only copies, once per process
    (reading and checking a dataset against its SHA-256 takes ~0.5 s)."""
    import numpy as np

    from levelfield.reference.datasets import load_dataset

    task = cached_suite(rules_version, rules_dir).task(task_id)
    inputs_module = task_module(task, "inputs")
    arrays = load_dataset(task, data_dir)
    inputs = {name: np.array(array[:n_eval]) for name, array in inputs_module.model_inputs(arrays, "eval").items()}
    labels = np.array(inputs_module.labels(arrays, "eval")[:n_eval])
    for array in (*inputs.values(), labels):
        array.setflags(write=False)  # shared by every run of this process
    return inputs, labels


def _weights(options: InferOptions, spec_module, task: Task) -> tuple[dict, str, str | None]:
    """(weights, result.json's label for them, their SHA-256): --weights, else a fidelity-gated task's pinned
    reference weights (rules 1.2, reference/fidelity_weights.py), else the seed-0 initial weights."""
    if options.weights is not None:
        from levelfield.reference.weights import load_weights

        return load_weights(options.weights), str(options.weights), sha256_file(options.weights)
    if "fidelity" in task.inference and options.framework != NULL_FRAMEWORK:
        from levelfield.reference.fidelity_weights import label, load_fidelity_weights

        return load_fidelity_weights(task), label(task), None
    return spec_module.init_weights(INIT_WEIGHTS_SEED), f"init(seed={INIT_WEIGHTS_SEED})", None


def run_precision(options: InferOptions, task: Task) -> str:
    """The precision the run computes in: --precision, else fp32 where the rules allow it, else their first;
    a precision the task's rules do not allow for inference is refused in one line."""
    from levelfield.ground.fidelity import precisions

    allowed = precisions(task)
    precision = options.precision or ("fp32" if "fp32" in allowed else allowed[0])
    if precision not in allowed:
        raise UserError(
            f"{task.path}: --precision {precision} found / expected one of {', '.join(allowed)} "
            f"(inference.precisions of {task.id})"
        )
    return precision


def infer(options: InferOptions, impl: Implementation | NullImplementation | None = None) -> dict:
    """Run one scenario in one mode; returns the result.json content (also written to options.out).

    `impl`: an already built implementation of options.task_id x options.framework (tests and
    benchmarks reuse one compiled model across runs); the weights are loaded into it all the same.
    Raises InferAborted on SIGINT / SIGTERM or when predict fails during LoadGen's run (see the
    module docstring). Any other error after --out was prepared is recorded as "failed" in
    result.json and raised as it was.
    """
    if abandoned_work_running():
        raise RuntimeError("an aborted LoadGen run is still running in this process; start a new process")
    if options.sut not in (None, *SUT_KINDS):
        raise UserError(f"sut {options.sut!r}: expected one of {', '.join(SUT_KINDS)}")
    state = RunState(options)
    with _SignalTrap() as trap:
        try:
            return _infer(options, impl, state)
        except RunInterrupted:
            raise state.abort("aborted", f"interrupted by {trap.signal_name}", trap.exit_code()) from None
        except InferAborted:
            raise
        except Exception as e:  # e.g. predict failing in the warm-up: recorded, then raised as it was
            if not state.out_ready:
                raise
            aborted = state.abort("failed", f"{type(e).__name__}: {e}", EXIT_FAILED)
            if aborted.loadgen_running:  # the caller must end the process, not unwind past LoadGen
                raise aborted from e
            raise


def _check_ids(suite, options: InferOptions) -> None:
    for kind, value in (("scenario", options.scenario), ("mode", options.mode), ("profile", options.profile)):
        suite.check_id(kind, value)
    if options.framework != NULL_FRAMEWORK:
        from levelfield.ground.registry import admit_framework

        # The rules' inference frameworks, or a plugin's (docs/plugins.md).
        admit_framework(suite, options.task_id, options.framework, kind="inference_framework")
    elif options.null_cost is None:
        raise UserError(f"framework {NULL_FRAMEWORK!r} needs a cost model (--cost-per-call-us / --cost-per-sample-us)")
    if options.repeats is not None and options.repeats < 1:
        raise UserError(f"--repeats {options.repeats}: expected an integer >= 1")
    if options.framework == NULL_FRAMEWORK:
        return
    from levelfield.ground.registry import FRAMEWORK_PACKAGES, load_implementation

    # A plugin's class is imported and held to the interface here, before --out is touched: a broken plugin
    # writes nothing. A built-in's framework is imported here only when --device needs its answer.
    if options.device is not None or options.framework not in FRAMEWORK_PACKAGES:
        implementation = load_implementation(options.task_id, options.framework)
        if options.device is not None and (refusal := implementation.device_refusal(options.device)):
            raise UserError(f"--device {options.device}: {refusal}")


def build_implementation(options: InferOptions, task: Task) -> Implementation | NullImplementation:
    """The implementation the options name: a framework's (compiled or eager, at the run's precision), or
    `none` at its cost."""
    if options.framework == NULL_FRAMEWORK:
        from levelfield.reference.null_model import NullImplementation

        return NullImplementation(task, options.null_cost)
    from levelfield.ground.registry import load_implementation

    implementation = load_implementation(options.task_id, options.framework)
    recipe = Recipe.from_task(task).with_precision(run_precision(options, task))
    if refusal := implementation.refusal(recipe):
        raise UserError(refusal)
    return implementation(recipe, mode=options.compile_mode, device=options.device)


def _infer(options: InferOptions, impl, state: RunState) -> dict:
    from levelfield.harness.result_file import RunSetup, build_result
    from levelfield.harness.run_meter import sample_interval_ms
    from levelfield.harness.session import Session

    suite = cached_suite(options.rules_version, options.rules_dir)
    _check_ids(suite, options)
    task = suite.task(options.task_id).for_profile(options.profile)  # the profile's accuracy reference too
    if options.scenario not in task.scenarios:
        raise UserError(f"{task.path}: scenario {options.scenario!r} is not defined for {task.id}")
    inputs_module, spec_module = task_module(task, "inputs"), task_module(task, "model_spec")
    eff = _effective_settings(options, suite, task)
    precision = run_precision(options, task)
    if impl is None:  # before --out is touched: a precision the framework's code does not run is refused here
        impl = build_implementation(options, task)
    weights, weights_label, weights_sha256 = _weights(options, spec_module, task)
    _prepare_out(options.out, options.force)
    state.out_ready = True
    state.identity.update({"rules_version": suite.version, "weights": weights_label, "precision": precision})
    setup = RunSetup(
        options=options,
        suite=suite,
        task=task,
        eff=eff,
        weights_label=weights_label,
        weights_sha256=weights_sha256,
        precision=precision,
    )

    eval_inputs, eval_labels = cached_eval_set(
        options.rules_version, options.rules_dir, task.id, options.data_dir, task.inference_samples
    )

    def respond_rows(batch):  # the work LoadGen times: predict, then the task's response rows
        return spec_module.to_response(impl.predict(batch))

    qsl = sut_module.SampleLibrary(eval_inputs, eff["performance_sample_count"])
    session = Session(
        options,
        eff,
        impl,
        weights,
        qsl,
        respond_rows,
        state,
        max_predict_batch=inputs_module.MAX_PREDICT_BATCH,
        sample_interval_ms=sample_interval_ms(suite),
    )
    outcome = _on_compute_thread(session.run, state)
    state.phase = "scoring"
    result = build_result(setup, impl, outcome)
    if options.mode == "accuracy":
        accuracy = _write_accuracy(options, task, eval_labels, precision, state)
        result["accuracy"] = accuracy
        result["submittable"] = result["submittable"] and accuracy["pass"]
    state.phase = "writing"
    atomic_write_text(options.out / "result.json", json.dumps(result, indent=2) + "\n", overwrite=True)
    return result


def _effective_settings(options: InferOptions, suite, task) -> dict:
    """What LoadGen is asked for: the rules' scenario settings for the profile under the user's
    user.conf, the profile's performance repeats unless --repeats says otherwise, and for
    framework `none` its cost model (never submittable)."""
    eff = loadgen_config.effective_settings(
        suite,
        task,
        options.profile,
        options.scenario,
        options.mode,
        user_conf=options.user_conf,
        dataset_samples=task.inference_samples,
    )
    eff["repeats"] = options.repeats or int(suite.profiles[options.profile]["inference_repeats"])
    if options.framework == NULL_FRAMEWORK:
        eff["submittable"] = False
        eff["null_cost"] = options.null_cost.as_dict()
    return eff


def _write_accuracy(options: InferOptions, task, eval_labels, precision: str, state: RunState) -> dict:
    """Score LoadGen's accuracy log with the task's metric (the checker's code) and write accuracy.json: its
    agreement with the pinned reference at the run's precision where the rules define a fidelity gate;
    a log that cannot be scored aborts the run as failed."""
    from levelfield.ground.accuracy import score_accuracy_log

    labels = None if "fidelity" in task.inference else eval_labels
    try:
        accuracy = score_accuracy_log(options.out / "mlperf_log_accuracy.json", task, labels, precision)
    except ValueError as e:  # e.g. a diverged model's NaN scores: the metric is undefined
        raise state.abort("failed", f"scoring the accuracy log failed: {e}", EXIT_FAILED) from e
    state.phase = "writing"
    atomic_write_text(
        options.out / "accuracy.json", json.dumps({"status": "completed", **accuracy}, indent=2) + "\n", overwrite=True
    )
    return accuracy


def _on_compute_thread(work, state: RunState):
    """work() on a new thread while this (main) thread draws progress, watches the SUT and takes signals."""
    from levelfield.harness.progress import LoadGenProgress
    from levelfield.harness.session import SutFailed

    outcome: dict = {}
    done = threading.Event()

    def target():
        try:
            outcome["value"] = work()
        except BaseException as e:
            outcome["error"] = e
        finally:
            done.set()

    state.work_done = done
    # Waiting on an Event, not Thread.join: a signal handler raising inside join() makes
    # Python 3.11 mark the still-running thread as stopped (bpo-45274's cleanup).
    state.worker = threading.Thread(target=target, name="levelfield-compute", daemon=True)
    state.worker.start()
    shown, progress = None, None
    try:
        while not done.wait(POLL_S):
            current = state.current
            if current is not shown:
                if progress is not None:
                    progress.close()
                progress = (
                    None
                    if current is None
                    else LoadGenProgress(current.label, current.eff, enabled=state.options.progress)
                )
                shown = current
            if progress is not None:
                progress.update(
                    time.perf_counter() - current.started, current.sut.queries_issued, current.sut.samples_done
                )
            if state.sut is not None and state.sut.error is not None:
                error = state.sut.error
                raise state.abort("failed", f"predict raised {type(error).__name__}: {error}", EXIT_FAILED) from error
    finally:
        if progress is not None:
            progress.close()
    error = outcome.get("error")
    if isinstance(error, SutFailed):  # failed while answering the last samples
        raise state.abort("failed", str(error), EXIT_FAILED) from error.cause
    if error is not None:
        raise error
    return outcome["value"]
