"""The time-to-accuracy trainer behind `levelfield train`.

    from levelfield.reference.harness.trainer import TrainOptions, train
    summary = train(TrainOptions(task_id="fmnist-resnet", framework="jax", out=Path("runs/fm-jax"),
                                 profile="smoke"))

The trainer owns timing, logging, evaluation cadence and the stop-at-target
decision; the framework code only steps, predicts and loads weights. Timing is
MLPerf's: reading the data, building the model, loading the initial weights
and the one-time compilation happen between `init_start` and `init_stop` and
are not timed; the clock runs from `run_start` to `run_stop`. Compilation is
triggered by one warm-up step (and one warm-up evaluation) whose effect is then
undone by reloading the initial weights, which also resets the optimizer; its
duration is logged as `levelfield_time_to_first_step_s`.

With `levelfield train --nproc N` (PyTorch), N copies of this trainer run
under torchrun, each with its `World` (reference/harness/world.py): each
rank trains on its share of every global batch, and only rank 0 logs,
evaluates and saves; the stop decision is broadcast so all ranks stop together.
"""

from __future__ import annotations

import json
import re
import resource
import secrets
import signal
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mlperf_logging.mllog import constants as K

from levelfield.ground.registry import task_module
from levelfield.ground.errors import UserError
from levelfield.reference.harness.world import SINGLE
from levelfield.ground.environment import environment_fingerprint
from levelfield.reference.harness.progress import EpochProgress
from levelfield.reference.harness.runlog import NullLog, RunLog
from levelfield.reference.interface import COMPILED, Recipe
from levelfield.reference.schedule import batch_order, learning_rates
from levelfield.ground.stats import spread, time_to_train

SEED_LIMIT = 2**31  # seeds fit every framework's integer seed type
# Device names of implementations computing on a GPU: "cuda:0" (PyTorch, JAX), "/physical_device:GPU:0" (TF).
_GPU_DEVICE = re.compile(r"cuda|gpu", re.IGNORECASE)


class RunInterrupted(BaseException):
    """SIGINT or SIGTERM arrived; BaseException so no `except Exception` in framework code swallows it."""


@dataclass
class TrainOptions:
    task_id: str
    framework: str
    out: Path
    profile: str = "submission"
    runs: int | None = None          # default: the rules' run count for the profile
    seed: int | None = None          # run i uses seed + i; default: a random base seed
    mode: str = COMPILED
    org: str = "levelfield"
    division: str = "closed"
    system: dict | None = None       # a filled-in system description, for submission_platform/status
    data_dir: str | None = None
    rules_dir: str | None = None
    rules_version: str | None = None
    force: bool = False
    save_weights: bool = False
    overrides: dict = field(default_factory=dict)  # tunable hyperparameters (closed division)
    stop_at_target: bool = True      # False: train all max_epochs (calibration curves; never a result)


@dataclass
class RunOutcome:
    index: int
    seed: int
    status: str                       # success | aborted
    reason: str                       # target reached | max epochs | interrupted | error
    epochs: int
    time_to_train_s: float | None     # run_start -> run_stop, successful runs only
    time_to_first_step_s: float
    peak_rss_mib: float
    evals: list = field(default_factory=list)  # [[epoch, value], ...]
    log: str = ""
    # Measured on GPUs only (None on a CPU-only machine): the framework's peak allocation,
    # NVML's used memory at run_stop, and NVML's energy between run_start and run_stop.
    peak_device_memory_mib: float | None = None
    device_memory_used_mib: float | None = None
    energy_j: float | None = None


def peak_rss_mib() -> float:
    """Peak resident memory of this process (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Trainer:
    """Runs `runs` independent time-to-accuracy runs of one task in one framework.

    `world` is this process's place among the processes of a run: one process
    by default; levelfield/torchrun.py (worker_main) sets it before run().
    """

    def __init__(self, options: TrainOptions):
        from levelfield.ground.registry import load_implementation
        from levelfield.rules import load_suite

        self.o = options
        self.suite = load_suite(options.rules_version, options.rules_dir)
        self.suite.check_id("framework", options.framework)
        self.suite.check_id("profile", options.profile)
        self.suite.check_id("division", options.division)
        self.task = self.suite.task(options.task_id).for_profile(options.profile)  # the profile's target too
        self.settings = self.task.training
        self.runs = options.runs or self.settings["runs"]
        try:
            self.recipe = Recipe.from_task(self.task, **options.overrides)
        except ValueError as e:
            raise UserError(f"{self.task.path}: {e}") from None
        self.impl_class = load_implementation(options.task_id, options.framework)
        self.inputs_module = task_module(self.task, "inputs")
        self.metric_module = task_module(self.task, "metric")
        self.spec_module = task_module(self.task, "model_spec")
        base = options.seed if options.seed is not None else secrets.randbelow(SEED_LIMIT - self.runs)
        self.seeds = [base + i for i in range(self.runs)]
        self.world = SINGLE
        self.interrupted_by = None
        self._finishing = False  # while a run's end is logged, a signal is recorded, not raised

    # -- one run ------------------------------------------------------------------
    def _header(self, log: RunLog, seed: int, index: int) -> None:
        system = self.o.system or {}
        log.event(K.SUBMISSION_BENCHMARK, self.task.id)
        log.event(K.SUBMISSION_ORG, self.o.org)
        log.event(K.SUBMISSION_DIVISION, self.o.division)
        log.event(K.SUBMISSION_STATUS, system.get("status", "rdi"))
        log.event(K.SUBMISSION_PLATFORM, system.get("system_name", socket.gethostname()))
        log.event(K.CACHE_CLEAR, True)
        log.start(K.INIT_START)
        log.event(K.SEED, seed)
        log.event("levelfield_run_index", index)
        log.event("levelfield_rules_version", self.suite.version)
        log.event("levelfield_profile", self.o.profile)
        log.event("levelfield_submittable", self.suite.profiles[self.o.profile]["submittable"])
        log.event("levelfield_quality_metric", self.task.quality["metric"])
        log.event("levelfield_quality_target", self.task.quality["target"])

    def _data(self, log: RunLog):
        from levelfield.reference.datasets import load_dataset, verify_dataset

        report = verify_dataset(self.task, self.o.data_dir)
        report.raise_if_bad()
        log.event("levelfield_dataset_digest", {c.label or c.what: c.actual for c in report.checks})
        arrays = load_dataset(self.task, self.o.data_dir)
        n_train, n_eval = self.task.train_samples, self.task.eval_samples
        take = lambda d, n: {k: v[:n] for k, v in d.items()}  # noqa: E731 - profiles use the first n samples
        train = (take(self.inputs_module.model_inputs(arrays, "train"), n_train),
                 self.inputs_module.labels(arrays, "train")[:n_train])
        evaluation = (take(self.inputs_module.model_inputs(arrays, "eval"), n_eval),
                      self.inputs_module.labels(arrays, "eval")[:n_eval])
        log.event(K.TRAIN_SAMPLES, n_train)
        log.event(K.EVAL_SAMPLES, n_eval)
        return train, evaluation

    def run_one(self, index: int, seed: int) -> RunOutcome:
        from levelfield.ground.sysinfo import collect_system_description, fingerprint

        world = self.world
        log = RunLog(self.o.out / f"result_{index}.txt", overwrite=self.o.force) if world.primary else NullLog()
        outcome = RunOutcome(index, seed, "aborted", "interrupted", 0, None, 0.0, 0.0,
                             log=str(log.path) if log.path else "")
        impl = meter = energy_start_mj = None
        stopped = False  # run_stop logged
        self._finishing = False
        try:
            self._header(log, seed, index)
            (train_inputs, train_labels), (eval_inputs, eval_labels) = self._data(log)
            impl = self.impl_class(self.recipe, mode=self.o.mode)
            log.event("levelfield_framework", self.o.framework)
            log.event("levelfield_framework_version", impl.version())
            log.event("levelfield_compile_mode", impl.mode)
            log.event("levelfield_device", impl.device)
            log.event("levelfield_world_size", world.size)
            if world.size > 1:
                log.event("levelfield_distributed_backend", world.backend)
            log.event("levelfield_system_fingerprint", fingerprint(collect_system_description()))
            log.event("levelfield_environment", environment_fingerprint(self.o.framework))
            weights = self.spec_module.init_weights(seed)
            impl.load(weights)
            for name, value in impl.hyperparameters().items():  # read back from the loaded optimizer
                log.event(self.suite.hyperparameter_log_keys[name], value)
            impl.set_train_data(train_inputs, train_labels)
            batch = self.recipe.global_batch_size
            steps_per_epoch = len(train_labels) // batch
            max_epochs = self.settings["max_epochs"]
            lrs = learning_rates(self.recipe, steps_per_epoch, max_epochs)
            # Warm-up: compile the train step and predict, then undo the step. Every rank takes the
            # step (DDP's collectives need all of them); only rank 0 ever predicts.
            started = time.perf_counter()
            impl.train_steps(world.share(batch_order(seed, 0, len(train_labels), batch)[:1]), lrs[:1])
            outcome.time_to_first_step_s = time.perf_counter() - started
            if world.primary:
                impl.predict(eval_inputs)
            impl.load(weights)
            log.event("levelfield_time_to_first_step_s", outcome.time_to_first_step_s)
            log.end(K.INIT_STOP)
            log.start(K.RUN_START)
            meter = self._gpu_meter(impl)
            energy_start_mj = meter.energy_mj() if meter else None
            run_started = time.perf_counter()
            outcome.reason = "max epochs"
            progress = EpochProgress(self.task.id, self.o.framework, index, max_epochs, steps_per_epoch)
            for epoch in range(1, max_epochs + 1):
                outcome.epochs = epoch
                log.start(K.EPOCH_START, metadata={K.EPOCH_NUM: epoch})
                # This rank's share of the global batches (all of them in one process).
                order = world.share(batch_order(seed, epoch, len(train_labels), batch))
                epoch_lrs = lrs[(epoch - 1) * steps_per_epoch: epoch * steps_per_epoch]
                # Only rank 0 shows progress; the other ranks train the epoch in one call.
                chunks = progress.epoch(epoch, order, epoch_lrs) if world.primary else [(order, epoch_lrs)]
                for rows in chunks:
                    impl.train_steps(*rows)
                log.end(K.EPOCH_STOP, metadata={K.EPOCH_NUM: epoch})
                if epoch % self.settings["eval_every_epochs"] and epoch != max_epochs:
                    continue
                reached = False
                if world.primary:
                    log.start(K.EVAL_START, metadata={K.EPOCH_NUM: epoch})
                    value = float(self.metric_module.score(impl.predict(eval_inputs), eval_labels))
                    log.event(K.EVAL_ACCURACY, value, metadata={K.EPOCH_NUM: epoch})
                    log.end(K.EVAL_STOP, metadata={K.EPOCH_NUM: epoch})
                    outcome.evals.append([epoch, value])
                    progress.evaluated(epoch, self.task.quality["metric"], value, self.task.quality["target"])
                    reached = value >= self.task.quality["target"]
                if world.agree(reached and self.o.stop_at_target):  # rank 0's decision, on every rank
                    outcome.status, outcome.reason = "success", "target reached"
                    break
            elapsed = time.perf_counter() - run_started
            stopped = self._finish(log, outcome, impl, meter, energy_start_mj)
            if outcome.status == "success":
                outcome.time_to_train_s = elapsed
                if self.o.save_weights and world.primary:
                    from levelfield.reference.weights import save_weights
                    save_weights(self.o.out / f"weights_{index}.npz", impl.export(), overwrite=self.o.force)
            return outcome
        except BaseException as error:
            self._finishing = True  # first: a signal from here on must not cut the log's end short
            interrupted = isinstance(error, RunInterrupted) or self.interrupted_by is not None
            # With several processes, another rank's failure surfaces here as a collective's error.
            outcome.status, outcome.reason = "aborted", "interrupted" if interrupted else "error"
            if not stopped:
                stopped = self._finish(log, outcome, impl, meter, energy_start_mj)
            if interrupted:  # recorded as aborted, never as a result; run() starts no further run
                self.interrupted_by = self.interrupted_by or str(error)
                return outcome
            raise
        finally:
            # A crashed run keeps the .inprogress name: it is not a result, not even an aborted one.
            log.close(final=outcome.reason != "error")
            if meter:
                meter.close()

    def _gpu_meter(self, impl):
        """NVML counters of the GPUs this run computes on (rank 0 reads all N), or None (CPU, no NVML)."""
        if not self.world.primary or not _GPU_DEVICE.search(str(impl.device)):
            return None
        from levelfield.ground.accelerators import open_gpu_meter
        return open_gpu_meter(self.world.size)

    def _finish(self, log, outcome: RunOutcome, impl=None, meter=None, energy_start_mj=None) -> bool:
        """Log the run's resource use and run_stop; returns True (run_stop written)."""
        self._finishing = True
        outcome.peak_rss_mib = peak_rss_mib()
        log.event("levelfield_peak_rss_mib", outcome.peak_rss_mib)
        if impl is not None:
            outcome.peak_device_memory_mib = impl.peak_device_memory_mib()
        if meter is not None:
            from levelfield.ground.accelerators import energy_j
            outcome.device_memory_used_mib = meter.memory_used_mib()
            outcome.energy_j = energy_j(energy_start_mj, meter.energy_mj())
        for key, value in (("levelfield_peak_device_memory_mib", outcome.peak_device_memory_mib),
                           ("levelfield_device_memory_used_mib", outcome.device_memory_used_mib),
                           ("levelfield_energy_j", outcome.energy_j)):
            if value is not None:  # absent, never made up, where there is no GPU
                log.event(key, value)
        log.end(K.RUN_STOP, metadata={K.STATUS: outcome.status, "reason": outcome.reason})
        return True

    # -- all runs -----------------------------------------------------------------
    def _on_signal(self, signum, frame):
        """SIGINT/SIGTERM: stop the run now, unless its end is being logged (then only remember it)."""
        self.interrupted_by = self.interrupted_by or signal.Signals(signum).name
        if not self._finishing:
            raise RunInterrupted(signal.Signals(signum).name)

    def run(self) -> dict:
        outcomes = []
        self.interrupted_by = None
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            for index, seed in enumerate(self.seeds):
                outcomes.append(self.run_one(index, seed))
                if self.interrupted_by:
                    break
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        return {
            "task": self.task.id, "framework": self.o.framework, "mode": self.o.mode,
            "profile": self.o.profile, "rules_version": self.suite.version, "world_size": self.world.size,
            "quality_metric": self.task.quality["metric"], "quality_target": self.task.quality["target"],
            "runs_requested": self.runs, "interrupted_by": self.interrupted_by,
            "runs": [asdict(o) for o in outcomes],
            "time_to_train_s": time_to_train_figures(outcomes, self.settings["olympic_drop"]) if outcomes else None,
            "time_to_first_step_s": spread([o.time_to_first_step_s for o in outcomes]) if outcomes else None,
        }


def time_to_train_figures(outcomes: list[RunOutcome], drop: int) -> dict:
    """summary.json's time_to_train_s: levelfield.ground.stats.time_to_train over every run, a run that did not
    succeed as None (the slowest), exactly as the checker and the leaderboard score the logs."""
    return time_to_train([o.time_to_train_s if o.status == "success" else None for o in outcomes], drop)


def train(options: TrainOptions) -> dict:
    return Trainer(options).run()


def write_summary(summary: dict, out: Path, rules_dir: str | None = None) -> Path:
    """Cross-check every log with mlperf_logging's engine, then write summary.json (rank 0 only).

    `rules_dir` is the run's own --rules-dir: the engine's ruleset comes from the rules the run used."""
    from levelfield.ground.fsutil import atomic_write_text
    from levelfield.reference.harness.compliance import peer_compliance
    from levelfield.rules import load_suite

    suite = load_suite(summary["rules_version"], rules_dir)
    for entry in summary["runs"]:
        entry["peer_compliance"], _ = peer_compliance(Path(entry["log"]), suite)
    path = Path(out) / "summary.json"
    atomic_write_text(path, json.dumps(summary, indent=2) + "\n", overwrite=True)
    return path
