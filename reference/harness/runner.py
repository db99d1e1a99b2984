"""The LoadGen scenario runner behind `levelfield infer`: one harness for every task x framework.

    from levelfield.reference.harness.runner import InferOptions, infer
    result = infer(InferOptions(task_id="ctr-dlrm", framework="jax", scenario="offline",
                                mode="performance", out=Path("runs/ctr-jax-offline"), profile="smoke"))

Steps: read the rules and the user's overrides (a typo fails here, before any
framework is imported), load the weights (a file, or `init_weights(0)`), build
the implementation, warm up (one predict per batch size the scenario will use,
so compilation happens before LoadGen's clock starts; reported as `warmup_s`),
then hand a QSL over the eval set and a SUT around `impl.predict` (its outputs
turned into the task's response rows by `model_spec.to_response`) to LoadGen.
LoadGen writes its own files into `out`; the runner adds `settings.json` (the
exact settings), `result.json` (`"status": "completed"`, metric with its unit,
LoadGen's verdict and reasons, fingerprints) and, in accuracy mode,
`accuracy.json` (the task's metric over mlperf_log_accuracy.json, against the
rules' threshold).

Interrupts: LoadGen's StartTest blocks in C++ and cannot be stopped, so it runs
in a worker thread while the main thread waits, draws the progress bar and
takes SIGINT / SIGTERM. An interrupted or failed run leaves result.json with
`"status": "aborted"` (or `"failed"`), the reason and the phase, and no metric;
accuracy.json is removed. `infer` then raises `InferAborted`; when LoadGen's
thread is still alive the process must end (the CLI exits with 128 + signal).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from levelfield.reference.harness import loadgen_config
from levelfield.reference.harness import sut as sut_module
from levelfield.reference.interface import COMPILED, Recipe

from levelfield.errors import UserError
from levelfield.fsutil import atomic_write_text

INIT_WEIGHTS_SEED = 0  # without --weights the runner measures the seed-0 initial model
# Files one run writes into --out; a second run refuses to touch them without --force.
OUTPUT_FILES = ("result.json", "accuracy.json", "settings.json", "mlperf_log_summary.txt",
                "mlperf_log_detail.txt", "mlperf_log_accuracy.json", "mlperf_log_trace.json")
# How often the main thread wakes while LoadGen runs: progress bar, signals, SUT errors.
POLL_S = 0.2
EXIT_FAILED = 1
SUT_KINDS = ("fast", "plain")  # LoadGen's ConstructFastSUT / ConstructSUT

# Set when the StartTest of a run aborted in this process returns (it may never): LoadGen's
# state is process-wide, so no second run may start beside a LoadGen still running.
_abandoned_loadgen: threading.Event | None = None


@dataclass
class InferOptions:
    task_id: str
    framework: str
    scenario: str
    mode: str                       # performance | accuracy (LoadGen's PerformanceOnly | AccuracyOnly)
    out: Path
    profile: str = "submission"
    weights: Path | None = None     # None: init_weights(INIT_WEIGHTS_SEED)
    user_conf: Path | None = None
    compile_mode: str = COMPILED
    force: bool = False
    data_dir: str | None = None
    rules_dir: str | None = None
    rules_version: str | None = None
    sut: str | None = None          # fast | plain; None: sut.FAST_SUT_DEFAULT for the scenario
    progress: bool = True           # the bar on stderr (shown only on a terminal)


class RunInterrupted(BaseException):
    """SIGINT or SIGTERM arrived; BaseException so no `except Exception` in framework code swallows it."""


class InferAborted(Exception):
    """The run did not complete; result.json (if --out was prepared) says "aborted" or "failed".

    exit_code: 128 + the signal's number (130 SIGINT, 143 SIGTERM, as `levelfield train`) or 1.
    loadgen_running: LoadGen's thread is still alive (its SUT answers nothing more) and cannot be
    stopped: the process must end now, e.g. os._exit(exit_code), not start another run.
    """

    def __init__(self, message: str, *, status: str, exit_code: int, loadgen_running: bool):
        super().__init__(message)
        self.status, self.exit_code, self.loadgen_running = status, exit_code, loadgen_running


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


class _RunState:
    """What an abort needs to know: how far the run got, and what to stop or record."""

    def __init__(self, options: InferOptions):
        self.options = options
        self.phase = "setup"             # setup | warmup | loadgen | scoring | writing
        self.out_ready = False           # --out prepared: result.json may be written
        self.identity: dict = {"task": options.task_id, "framework": options.framework,
                               "scenario": options.scenario, "mode": options.mode, "profile": options.profile}
        self.sut = None
        self.loadgen: threading.Event | None = None   # set when LoadGen's StartTest has returned
        self.started = time.perf_counter()

    def abort(self, status: str, reason: str, exit_code: int) -> InferAborted:
        """Stop answering, record the run as `status` (no metric, no accuracy.json), build the exception."""
        global _abandoned_loadgen
        if self.sut is not None:
            self.sut.abandon()
        running = self.loadgen is not None and not self.loadgen.is_set()
        if running:
            _abandoned_loadgen = self.loadgen
        message = f"{reason} during {self.phase}"
        if self.out_ready:
            out = self.options.out
            (out / "accuracy.json").unlink(missing_ok=True)
            record = {"status": status, "reason": reason, "phase": self.phase, **self.identity,
                      "elapsed_s": time.perf_counter() - self.started, "submittable": False}
            atomic_write_text(out / "result.json", json.dumps(record, indent=2) + "\n", overwrite=True)
            message += f"; {out / 'result.json'} records the run as {status}"
        return InferAborted(message, status=status, exit_code=exit_code, loadgen_running=running)


def _prepare_out(out: Path, force: bool) -> None:
    existing = [name for name in OUTPUT_FILES if (out / name).exists()]
    if existing and not force:
        raise UserError(f"{out}: already holds {', '.join(existing)}; not overwriting them",
                        hint="choose another --out, or pass --force to replace them")
    out.mkdir(parents=True, exist_ok=True)
    for name in existing:  # no stale accuracy log from an earlier run may survive next to the new one
        (out / name).unlink()


@functools.lru_cache(maxsize=4)
def cached_suite(rules_version: str | None, rules_dir: str | None):
    """The rules, parsed once per process: tests and benchmarks run many scenarios in one process
    (parsing and validating the YAML takes ~0.4 s); a CLI run reads them once anyway."""
    from levelfield.rules import load_suite
    return load_suite(rules_version, rules_dir)


@functools.lru_cache(maxsize=2)
def cached_eval_set(rules_version: str | None, rules_dir: str | None, task_id: str, data_dir: str | None,
                    n_eval: int) -> tuple[dict, object]:
    """(model inputs, labels) of the first n_eval eval rows, read-only copies, once per process
    (reading and checking a dataset against its SHA-256 takes ~0.5 s)."""
    import numpy as np
    from levelfield.reference.datasets import load_dataset

    task = cached_suite(rules_version, rules_dir).task(task_id)
    inputs_module = importlib.import_module(f"levelfield.reference.{task.package}.common.inputs")
    arrays = load_dataset(task, data_dir)
    inputs = {name: np.array(array[:n_eval]) for name, array in inputs_module.model_inputs(arrays, "eval").items()}
    labels = np.array(inputs_module.labels(arrays, "eval")[:n_eval])
    for array in (*inputs.values(), labels):
        array.setflags(write=False)  # shared by every run of this process
    return inputs, labels


def _weights(options: InferOptions, spec_module) -> tuple[dict, str]:
    if options.weights is None:
        return spec_module.init_weights(INIT_WEIGHTS_SEED), f"init(seed={INIT_WEIGHTS_SEED})"
    from levelfield.reference.weights import load_weights
    return load_weights(options.weights), str(options.weights)


def infer(options: InferOptions, impl=None) -> dict:
    """Run one scenario in one mode; returns the result.json content (also written to options.out).

    `impl`: an already built implementation of options.task_id x options.framework (tests and
    benchmarks reuse one compiled model across runs); the weights are loaded into it all the same.
    Raises InferAborted on SIGINT / SIGTERM or when predict fails during LoadGen's run (see the
    module docstring). Any other error after --out was prepared is recorded as "failed" in
    result.json and raised as it was.
    """
    if _abandoned_loadgen is not None and not _abandoned_loadgen.is_set():
        raise RuntimeError("an aborted LoadGen run is still running in this process; start a new process")
    if options.sut not in (None, *SUT_KINDS):
        raise UserError(f"sut {options.sut!r}: expected one of {', '.join(SUT_KINDS)}")
    state = _RunState(options)
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


def _infer(options: InferOptions, impl, state: _RunState) -> dict:
    from levelfield.reference.registry import load_implementation

    suite = cached_suite(options.rules_version, options.rules_dir)
    for kind, value in (("framework", options.framework), ("scenario", options.scenario),
                        ("mode", options.mode), ("profile", options.profile)):
        suite.check_id(kind, value)
    task = suite.task(options.task_id).for_profile(options.profile)  # the profile's accuracy reference too
    if options.scenario not in task.scenarios:
        raise UserError(f"{task.path}: scenario {options.scenario!r} is not defined for {task.id}")
    common = f"levelfield.reference.{task.package}.common"
    inputs_module = importlib.import_module(f"{common}.inputs")
    spec_module = importlib.import_module(f"{common}.model_spec")
    n_eval = task.eval_samples
    eff = loadgen_config.effective_settings(suite, task, options.profile, options.scenario, options.mode,
                                            user_conf=options.user_conf, dataset_samples=n_eval)
    if options.scenario == "offline":
        eff.setdefault("batch_size", inputs_module.MAX_PREDICT_BATCH)
    weights, weights_label = _weights(options, spec_module)
    _prepare_out(options.out, options.force)
    state.out_ready = True
    state.identity.update({"rules_version": suite.version, "weights": weights_label})
    atomic_write_text(options.out / "settings.json", json.dumps(eff, indent=2) + "\n", overwrite=True)

    eval_inputs, eval_labels = cached_eval_set(options.rules_version, options.rules_dir, task.id,
                                               options.data_dir, n_eval)
    if impl is None:
        impl = load_implementation(options.task_id, options.framework)(Recipe.from_task(task),
                                                                       mode=options.compile_mode)
    impl.load(weights)

    def respond_rows(batch):  # the work LoadGen times: predict, then the task's response rows
        return spec_module.to_response(impl.predict(batch))

    qsl = sut_module.SampleLibrary(eval_inputs, eff["performance_sample_count"])

    def warm_up() -> float:
        state.phase = "warmup"
        started = time.perf_counter()
        for size in sut_module.warmup_batch_sizes(options.scenario, eff, inputs_module.MAX_PREDICT_BATCH):
            respond_rows(qsl.gather(sut_module.warmup_indices(size, qsl.total_count)))
        return time.perf_counter() - started

    warmup_s = warm_up()
    state.phase = "loadgen"
    run_s, system_under_test = _run_loadgen(options, eff, respond_rows, qsl, state)
    from levelfield.reference.harness.loadgen_results import read_detail
    resizes = []  # an Offline query too small for this model: again, sized from LoadGen's own measurement
    while options.scenario == "offline" and options.mode == "performance" and \
            len(resizes) < loadgen_config.MAX_OFFLINE_RESIZES:
        resized = loadgen_config.resize_offline_query(eff, read_detail(options.out / "mlperf_log_detail.txt")[0])
        if resized is None:
            break
        resizes.append(resized)
        atomic_write_text(options.out / "settings.json", json.dumps(eff, indent=2) + "\n", overwrite=True)
        warmup_s += warm_up()  # the new query's last chunk may have a size not compiled yet
        state.phase = "loadgen"
        run_s, system_under_test = _run_loadgen(options, eff, respond_rows, qsl, state)
    state.phase = "scoring"
    result = _result(options, suite, task, eff, impl, weights_label, warmup_s, run_s, system_under_test)
    if resizes:
        result["offline_resized"] = resizes
    if options.mode == "accuracy":
        from levelfield.reference.harness.accuracy import score_accuracy_log
        try:
            accuracy = score_accuracy_log(options.out / "mlperf_log_accuracy.json", task, eval_labels)
        except ValueError as e:  # e.g. a diverged model's NaN scores: the metric is undefined
            raise state.abort("failed", f"scoring the accuracy log failed: {e}", EXIT_FAILED) from e
        state.phase = "writing"
        atomic_write_text(options.out / "accuracy.json",
                          json.dumps({"status": "completed", **accuracy}, indent=2) + "\n", overwrite=True)
        result["accuracy"] = accuracy
        result["submittable"] = result["submittable"] and accuracy["pass"]
    state.phase = "writing"
    atomic_write_text(options.out / "result.json", json.dumps(result, indent=2) + "\n", overwrite=True)
    return result


def _run_loadgen(options: InferOptions, eff: dict, respond_rows, qsl, state: _RunState) -> tuple[float, object]:
    """StartTest in a worker thread; the main thread polls for completion, SUT errors and signals."""
    import mlperf_loadgen as lg
    from levelfield.reference.harness.progress import LoadGenProgress

    fast = None if options.sut is None else options.sut == "fast"
    system_under_test = sut_module.make_sut(
        options.scenario, respond_rows, qsl, batch_size=int(eff.get("batch_size", 1)),
        max_batch_size=int(eff.get("max_batch_size", 1)), batch_timeout_us=int(eff.get("batch_timeout_us", 0)),
        fast=fast)
    state.sut = system_under_test
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(options.out)
    log_settings.log_output.copy_summary_to_stdout = False
    log_settings.enable_trace = False  # the trace costs time per sample; summary + detail carry the results
    settings = loadgen_config.test_settings(eff)
    handle_qsl = qsl.construct()
    handle_sut = system_under_test.construct()
    failure: list[BaseException] = []
    finished = threading.Event()

    def run_test():
        try:
            lg.StartTestWithLogSettings(handle_sut, handle_qsl, settings, log_settings)
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
            failure.append(e)
        finally:
            finished.set()

    # Waiting on an Event, not Thread.join: a signal handler raising inside join() makes
    # Python 3.11 mark the still-running thread as stopped (bpo-45274's cleanup).
    state.loadgen = finished
    label = f"{options.task_id}/{options.framework} {options.scenario} {options.mode}"
    started = time.perf_counter()
    with LoadGenProgress(label, eff, enabled=options.progress) as progress:
        threading.Thread(target=run_test, name="levelfield-loadgen", daemon=True).start()
        while not finished.wait(POLL_S):
            progress.update(time.perf_counter() - started, system_under_test.queries_issued,
                            system_under_test.samples_done)
            if system_under_test.error is not None:
                error = system_under_test.error
                raise state.abort("failed", f"predict raised {type(error).__name__}: {error}",
                                  EXIT_FAILED) from error
    run_s = time.perf_counter() - started
    state.loadgen = None
    try:
        system_under_test.close()  # stops the Server worker
    finally:
        system_under_test.destroy(handle_sut)
        lg.DestroyQSL(handle_qsl)
    if failure:
        raise failure[0]
    if system_under_test.error is not None:  # failed while answering the last samples
        error = system_under_test.error
        raise state.abort("failed", f"predict raised {type(error).__name__}: {error}", EXIT_FAILED) from error
    return run_s, system_under_test


def _result(options, suite, task, eff, impl, weights_label, warmup_s, run_s, system_under_test) -> dict:
    from levelfield.reference.harness.environment import environment_fingerprint
    from levelfield.reference.harness.loadgen_results import (
        read_detail,
        scenario_result,
    )
    from levelfield.tools.sysinfo import collect_system_description, fingerprint

    records, errors = read_detail(options.out / "mlperf_log_detail.txt")
    percentile = eff.get("latency_percentile")
    outcome = scenario_result(records, errors, options.scenario, percentile)
    expected_version = str(suite.tools["loadgen"]["version"])
    if outcome["loadgen_version"] and not str(outcome["loadgen_version"]).startswith(expected_version + " "):
        # Results from another LoadGen are not comparable: the run is invalid whatever LoadGen itself says.
        outcome["invalid_reasons"].append(f"LoadGen {outcome['loadgen_version']}, the rules expect {expected_version}")
        outcome["valid"] = False
    result = {
        "status": "completed",
        "task": task.id, "framework": options.framework, "framework_version": impl.version(),
        "compile_mode": impl.mode, "device": impl.device, "scenario": options.scenario, "mode": options.mode,
        "profile": options.profile, "rules_version": suite.version, "weights": weights_label,
    }
    if options.mode == "performance":
        result.update(outcome)
        result["submittable"] = eff["submittable"] and outcome["valid"]
    else:  # LoadGen's validity judges timing, which accuracy mode does not measure
        result.update({"loadgen_version": outcome["loadgen_version"], "loadgen_errors": outcome["loadgen_errors"],
                       "submittable": eff["submittable"] and not errors})
    result.update({
        "loadgen_version_expected": expected_version,
        "warmup_s": warmup_s, "loadgen_run_s": run_s,
        "sut": "fast" if system_under_test.fast else "plain",
        "predict_calls": system_under_test.predict_calls,
        "dataset_samples": eff["dataset_samples"],
        "system_fingerprint": fingerprint(collect_system_description()),
        "environment": environment_fingerprint(options.framework),
    })
    if options.scenario == "server":
        sizes = getattr(system_under_test, "batch_sizes", [])
        result["server_batches"] = {"count": len(sizes), "mean_size": (sum(sizes) / len(sizes)) if sizes else None,
                                    "max_batch_size": eff["max_batch_size"],
                                    "batch_timeout_us": eff["batch_timeout_us"]}
    return result
