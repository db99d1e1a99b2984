"""The time-to-accuracy trainer behind `levelfield train`.

    from levelfield.harness.options import TrainOptions
    from levelfield.harness.trainer import train
    summary = train(TrainOptions(task_id="fmnist-resnet", framework="jax", out=Path("runs/fm"), profile="smoke"))

The trainer owns timing, logging, evaluation cadence and the stop-at-target
decision; the framework code only steps, predicts and loads weights. Timing is
MLPerf's: reading the data, building the model, loading the initial weights
and the one-time compilation happen between `init_start` and `init_stop` and
are not timed; the clock runs from `run_start` to `run_stop`. Compilation is
triggered by one warm-up step (and one warm-up evaluation) whose effect is then
undone by reloading the initial weights, which also resets the optimizer; its
duration is logged as `levelfield_time_to_first_step_s`.

With `levelfield train --nproc N [--nnodes M]`, N x M copies of this trainer run (levelfield/cli/launch/), as
with `srun`/`mpirun levelfield train` (one per manager task), each with its `World` (levelfield/harness/world.py):
each rank trains on its share of every global batch, only rank 0 logs, evaluates and saves; the stop decision is
broadcast so all ranks stop together.

`--throughput-only [--steps N]` (throughput_only.py): the same init and warm-up (no predict), then
(rules 1.2) the rules' warm-up steps and N timed steps, no evaluation or target: a throughput result of
its own under rules that have them, never a time to train. Under rules 1.2 every call of train_steps in
the timed run is logged as a step window (levelfield/ground/step_windows.py), the figures' evidence.
"""

from __future__ import annotations

import json
import resource
import secrets
import signal
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from mlperf_logging.mllog import constants as K

from levelfield.ground import mllog_keys as LK
from levelfield.ground.environment import environment_fingerprint
from levelfield.ground.errors import UserError
from levelfield.ground.eval_cadence import EvalCadence
from levelfield.ground.registry import task_module
from levelfield.ground.scaling import scaling_efficiency, scaling_figures
from levelfield.ground.stats import spread, time_to_train
from levelfield.ground.step_windows import TIMED, WARMUP
from levelfield.ground.training_log import reaches_target
from levelfield.harness import throughput_only
from levelfield.harness.options import TrainOptions
from levelfield.harness.progress import EpochProgress
from levelfield.harness.run_meter import GPU_DEVICE, open_meter, sample_interval_ms, training_figures
from levelfield.harness.run_outcome import RunOutcome
from levelfield.harness.runlog import NullLog, RunLog
from levelfield.harness.throughput import StepClock, Throughput
from levelfield.harness.world import SINGLE
from levelfield.reference.interface import Recipe
from levelfield.reference.schedule import batch_order, learning_rates

if TYPE_CHECKING:
    from levelfield.ground.meter import ResourceMeter


class RunInterrupted(BaseException):
    """SIGINT or SIGTERM arrived; BaseException so no `except Exception` in framework code swallows it."""


@dataclass(frozen=True)
class RunData:
    """The rows a run trains and evaluates on: the profile's first train_samples / eval_samples."""

    train_inputs: dict[str, np.ndarray]
    train_labels: np.ndarray
    eval_inputs: dict[str, np.ndarray]
    eval_labels: np.ndarray


@dataclass(frozen=True)
class Schedule:
    """When a run steps, at which learning rate, and when it evaluates: fixed before run_start from the
    seed, the recipe and the rules, in numpy (reference/schedule.py), so every framework and rank agrees.
    The evaluation cadence is levelfield.ground.eval_cadence's, which the checker reads too."""

    seed: int
    train_samples: int
    global_batch_size: int
    steps_per_epoch: int
    max_epochs: int
    cadence: EvalCadence
    lrs: np.ndarray  # float64 [max_epochs * steps_per_epoch], one per step

    @classmethod
    def for_run(cls, recipe: Recipe, settings: dict, seed: int, train_samples: int) -> Schedule:
        batch, max_epochs = recipe.global_batch_size, settings["max_epochs"]
        steps_per_epoch = train_samples // batch
        return cls(
            seed=seed,
            train_samples=train_samples,
            global_batch_size=batch,
            steps_per_epoch=steps_per_epoch,
            max_epochs=max_epochs,
            cadence=EvalCadence.from_rules(settings, steps_per_epoch, batch),
            lrs=learning_rates(recipe, steps_per_epoch, max_epochs),
        )

    def batches(self, epoch: int) -> np.ndarray:
        """Row indices of the global batches of `epoch`, int64 [steps_per_epoch, global_batch_size];
        epoch 0 is the warm-up's, never trained in the timed run."""
        return batch_order(self.seed, epoch, self.train_samples, self.global_batch_size)

    def epoch_lrs(self, epoch: int) -> np.ndarray:
        """The learning rates of `epoch`'s steps (epochs count from 1)."""
        return self.lrs[(epoch - 1) * self.steps_per_epoch : epoch * self.steps_per_epoch]

    def segments(self, epoch: int) -> list[tuple[int, int, int | float | None]]:
        """`epoch`'s steps cut at its evaluations: (first step, end step, epoch_num of the eval that
        follows, or None), steps counted from 0 within the epoch, covering all of them in order."""
        breaks = self.cadence.breaks(epoch)
        cuts, start = [], 0
        for end in sorted(breaks):
            cuts.append((start, end, breaks[end]))
            start = end
        if start < self.steps_per_epoch:
            cuts.append((start, self.steps_per_epoch, None))
        return cuts


def now_ms() -> int:
    """The time mllog would stamp a line with now (ms since the epoch): run_start's and run_stop's, which
    the run is priced by (levelfield_price_usd), so the checker prices it again from the log (SYS010)."""
    return int(time.time() * 1000)


def peak_rss_mib() -> float:
    """Peak resident memory of this process (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Trainer:
    """Runs `runs` independent time-to-accuracy runs of one task in one framework.

    `world` is this process's place among the processes of a run: one process
    by default; levelfield/cli/launch/worker.py sets it before run() in each rank it starts.
    """

    def __init__(self, options: TrainOptions):
        from levelfield.ground.registry import admit_framework, load_implementation, training_refusal
        from levelfield.rules import load_suite

        self.o = options
        if refusal := training_refusal(options.framework):  # whatever the rules version names
            raise UserError(refusal)
        self.suite = load_suite(options.rules_version, options.rules_dir)
        self.suite.check_id("profile", options.profile)
        self.suite.check_id("division", options.division)
        # The rules' frameworks, or a plugin's in a division the rules admit plugins in (docs/plugins.md).
        admit_framework(self.suite, options.task_id, options.framework, options.division)
        self.task = self.suite.task(options.task_id).for_profile(options.profile)  # the profile's target too
        self.settings = self.task.training
        try:
            self.recipe = Recipe.from_task(self.task, **options.overrides)
        except ValueError as e:
            raise UserError(f"{self.task.path}: {e}") from None
        if (batch := self.recipe.global_batch_size) > (rows := self.task.train_samples):  # no step in an epoch
            raise UserError(f"{self.task.path}: global_batch_size {batch} found, expected <= {rows} training rows")
        # Throughput only: the steps each run trains and, under rules with throughput results, their repeats.
        self.plan = throughput_only.plan(options, self.task, self.recipe, self.settings["max_epochs"])
        default_runs = self.plan.runs if self.plan is not None and self.plan.runs else self.settings["runs"]
        self.runs = len(options.seeds) if options.seeds else options.runs or default_runs
        # Rules with throughput results (1.2) have every train_steps call of the timed run logged as a step window.
        self.step_windows = self.task.throughput is not None
        self.impl_class = load_implementation(options.task_id, options.framework)
        if not self.impl_class.trains:  # a plugin serving inference only (docs/plugins.md)
            raise UserError(
                f"{options.task_id}/{options.framework} serves inference only (its class sets trains = False); "
                f"expected an implementation that trains",
                hint=f"levelfield infer --task {options.task_id} --framework {options.framework} ...",
            )
        refusal = self.impl_class.refusal(self.recipe)  # e.g. a precision this framework's code does not run
        if refusal:
            raise UserError(f"{self.task.path}: {refusal}")
        if refusal := self.impl_class.device_refusal(options.device):
            raise UserError(f"--device {options.device}: {refusal}")
        self.inputs_module = task_module(self.task, "inputs")
        self.metric_module = task_module(self.task, "metric")
        self.spec_module = task_module(self.task, "model_spec")
        base = options.seed if options.seed is not None else secrets.randbelow(LK.SEED_LIMIT - self.runs)
        self.seeds = list(options.seeds) if options.seeds else [base + i for i in range(self.runs)]
        self.world = SINGLE
        self.timed = Throughput(self.recipe.global_batch_size)  # this run's timed steps (rank 0)
        self.clock = StepClock(NullLog(), windows=False)  # each run's own, with its log (run_one)
        self.interrupted_by = None
        self._finishing = False  # while a run's end is logged, a signal is recorded, not raised

    # -- one run ------------------------------------------------------------------
    def _header(self, log: RunLog, seed: int, index: int) -> None:
        """Who ran what under which rules, then init_start: the keys the checker reads first."""
        system = self.o.system or {}
        log.event(K.SUBMISSION_BENCHMARK, self.task.id)
        log.event(K.SUBMISSION_ORG, self.o.org)
        log.event(K.SUBMISSION_DIVISION, self.o.division)
        log.event(K.SUBMISSION_STATUS, system.get("status", "rdi"))
        log.event(K.SUBMISSION_PLATFORM, system.get("system_name", socket.gethostname()))
        log.event(K.CACHE_CLEAR, True)
        log.start(K.INIT_START)
        log.event(K.SEED, seed)
        log.event(LK.RUN_INDEX, index)
        log.event(LK.RULES_VERSION, self.suite.version)
        log.event(LK.PROFILE, self.o.profile)
        log.event(LK.SUBMITTABLE, self.suite.profiles[self.o.profile]["submittable"])
        if self.plan is not None:  # first thing a reader learns: this log is no time to train
            log.event(LK.THROUGHPUT_ONLY, self.plan.timed_steps)
            if self.plan.result:  # rules 1.2: a throughput result, whose warm-up steps the figure excludes
                log.event(LK.WARMUP_STEPS, self.plan.warmup_steps)
        log.event(LK.QUALITY_METRIC, self.task.quality["metric"])
        log.event(LK.QUALITY_TARGET, self.task.quality["target"])

    def run_one(self, index: int, seed: int) -> RunOutcome:
        """One time-to-accuracy run, timed as MLPerf times it: init (data, model, warm-up) is not timed,
        the clock runs from run_start to run_stop. An interrupt ends the log with run_stop aborted and
        the run is returned as aborted; any other error ends it the same way and is raised."""
        log = self._open_log(index)
        outcome = RunOutcome.started(index, seed, log.path)
        impl = meter = run_start_ms = None
        stopped = False  # run_stop logged
        self.timed = Throughput(self.recipe.global_batch_size)
        self.clock = StepClock(log, windows=self.step_windows)
        self._finishing = False
        try:
            # Init, not timed: data, model, initial weights, compilation.
            self._header(log, seed, index)
            data = self._data(log)
            impl = self.impl_class(self.recipe, mode=self.o.mode, device=self.o.device)  # device_refusal: None
            weights = self._set_up(log, impl, data, seed)
            schedule = Schedule.for_run(self.recipe, self.settings, seed, len(data.train_labels))
            self._warm_up(outcome, impl, data, schedule, weights)
            log.event(LK.TIME_TO_FIRST_STEP_S, outcome.time_to_first_step_s)
            log.end(K.INIT_STOP)
            # The timed run: its time to train is run_start to run_stop.
            run_start_ms = now_ms()
            log.start(K.RUN_START, time_ms=run_start_ms)
            meter = self._meter(impl)  # the run's memory, CPU, the host's load, energy: until run_stop
            run_started = time.perf_counter()
            if self.plan is None:
                self._train_to_target(log, outcome, impl, data, schedule)
            else:
                self._train_fixed_steps(log, outcome, impl, schedule)
            elapsed = time.perf_counter() - run_started
            stopped = self._finish(log, outcome, impl, meter, run_start_ms)
            if outcome.status == "success":
                self._keep_success(outcome, impl, elapsed)
            return outcome
        except BaseException as error:
            self._finishing = True  # first: a signal from here on must not cut the log's end short
            interrupted = self._mark_aborted(outcome, error)
            if not stopped:
                self._finish(log, outcome, impl, meter, run_start_ms)
            if interrupted:  # recorded as aborted, never as a result; run() starts no further run
                self.interrupted_by = self.interrupted_by or str(error)
                return outcome
            raise
        finally:
            # A crashed run keeps the .inprogress name: it is not a result, not even an aborted one.
            log.close(final=outcome.reason != "error")
            if meter is not None:
                meter.stop()  # its thread ends here whatever happened (a second stop answers the first's figures)
                if meter.gpu is not None:
                    meter.gpu.close()

    def _open_log(self, index: int) -> RunLog | NullLog:
        """Rank 0 writes the run's result file; the other ranks' lines would only repeat it."""
        if not self.world.primary:
            return NullLog()
        return RunLog(self.o.out / f"result_{index}.txt", overwrite=self.o.force)

    def _data(self, log: RunLog) -> RunData:
        """Check the dataset against the rules' digests before reading it: a result must say what it trained on."""
        from levelfield.reference.datasets import load_verified

        arrays, report = load_verified(self.task, self.o.data_dir)
        log.event(LK.DATASET_DIGEST, {c.label or c.what: c.actual for c in report.checks})
        n_train, n_eval = self.task.train_samples, self.task.eval_samples
        take = lambda d, n: {k: v[:n] for k, v in d.items()}  # noqa: E731 - profiles use the first n samples
        data = RunData(
            train_inputs=take(self.inputs_module.model_inputs(arrays, "train"), n_train),
            train_labels=self.inputs_module.labels(arrays, "train")[:n_train],
            eval_inputs=take(self.inputs_module.model_inputs(arrays, "eval"), n_eval),
            eval_labels=self.inputs_module.labels(arrays, "eval")[:n_eval],
        )
        log.event(K.TRAIN_SAMPLES, n_train)
        log.event(K.EVAL_SAMPLES, n_eval)
        return data

    def _set_up(self, log: RunLog, impl, data: RunData, seed: int) -> dict:
        """Log what runs where, load the seed's initial weights and hand over the training rows; returns
        the weights, which the warm-up loads again to undo its step."""
        from levelfield.ground.sysinfo import collect_system_description, fingerprint

        log.event(LK.FRAMEWORK, self.o.framework)
        log.event(LK.FRAMEWORK_VERSION, impl.version())
        log.event(LK.COMPILE_MODE, impl.mode)
        log.event(LK.DETERMINISM, impl.determinism_settings())  # what decides whether a rerun repeats it
        log.event(LK.DEVICE, impl.device)
        log.event(LK.WORLD_SIZE, self.world.size)
        log.event(LK.NODES, self.world.nodes)
        log.event(LK.LOCAL_BATCH_SIZE, self.recipe.global_batch_size // self.world.size)
        if self.world.size > 1:
            log.event(LK.DISTRIBUTED_BACKEND, self.world.backend)
        log.event(LK.LAUNCHER, self.world.launcher)
        if self.o.scaling_reference is not None:  # --scaling: the 1-process runs timed just before these
            log.event(LK.SCALING_REFERENCE, self.o.scaling_reference)
        if impl.batch_norm_spans:
            log.event(K.MODEL_BN_SPAN, self._bn_span(impl))
        if impl.input_workers is not None:
            log.event(LK.INPUT_WORKERS, impl.input_workers)
        log.event(LK.SYSTEM_FINGERPRINT, fingerprint(collect_system_description()))
        log.event(LK.ENVIRONMENT, environment_fingerprint(self.o.framework))
        weights = self.spec_module.init_weights(seed)
        impl.load(weights)
        for name, value in impl.hyperparameters().items():  # read back from the loaded optimizer
            log.event(self.suite.hyperparameter_log_keys[name], value)
        impl.set_train_data(data.train_inputs, data.train_labels)
        return weights

    def _bn_span(self, impl) -> int:
        """Samples one batch-norm statistic is computed over: the global batch, or a rank's share of it."""
        device = "cuda" if GPU_DEVICE.search(str(impl.device)) else "cpu"
        batch = self.recipe.global_batch_size
        return batch if impl.batch_norm_spans[device] == "global" else batch // self.world.size

    def _warm_up(self, outcome: RunOutcome, impl, data: RunData, schedule: Schedule, weights: dict) -> None:
        """Compile the train step and predict (rank 0; not for throughput-only runs, which never evaluate) before
        run_start, then undo the step by loading the initial weights again (which also resets the optimizer).
        The step's duration is the time to first step. Every rank steps (DDP's collectives need all of them)."""
        started = time.perf_counter()
        impl.train_steps(self.world.share(schedule.batches(0)[:1]), schedule.lrs[:1])
        outcome.time_to_first_step_s = time.perf_counter() - started  # now: an interrupted run reports it too
        if self.world.primary and self.plan is None:
            impl.predict(data.eval_inputs)
        impl.load(weights)

    def _train_to_target(self, log: RunLog, outcome: RunOutcome, impl, data: RunData, schedule: Schedule) -> None:
        """The timed epochs: train, evaluate at the rules' cadence (which may fall inside an epoch), and
        stop at the target (a success: the epoch is closed where it stopped) or after max_epochs
        (aborted, reason "max epochs")."""
        outcome.reason = "max epochs"
        with EpochProgress(
            self.task.id, self.o.framework, outcome.index, schedule.max_epochs, schedule.steps_per_epoch
        ) as progress:
            for epoch in range(1, schedule.max_epochs + 1):
                outcome.epochs = epoch
                if self._train_epoch(log, outcome, impl, data, schedule, progress, epoch):
                    # A calibration run stopped at its own value is never a result, so never a success.
                    calibrating = not self.o.stop_at_target
                    outcome.status = "aborted" if calibrating else "success"
                    outcome.reason = "calibration stop" if calibrating else "target reached"
                    return

    def _train_fixed_steps(self, log: RunLog, outcome: RunOutcome, impl, schedule: Schedule) -> None:
        """Throughput only: the first W + N steps of a time-to-accuracy run (its batches and learning rates,
        over as many epochs as they span), the W warm-up steps untimed (rules 1.2), no evaluation, no target;
        the run stays aborted, never a time to train."""
        outcome.reason = throughput_only.REASON
        warmup = self.plan.warmup_steps
        spans = throughput_only.step_spans(schedule.steps_per_epoch, warmup + self.plan.timed_steps)
        with EpochProgress(
            self.task.id, self.o.framework, outcome.index, len(spans), schedule.steps_per_epoch
        ) as progress:
            for epoch, steps in spans:
                outcome.epochs = epoch
                log.start(K.EPOCH_START, metadata={K.EPOCH_NUM: epoch})
                order = self.world.share(schedule.batches(epoch))[:steps]
                lrs, first = schedule.epoch_lrs(epoch)[:steps], (epoch - 1) * schedule.steps_per_epoch
                cut = min(max(warmup - first, 0), steps)  # this epoch's warm-up steps come first
                if cut:
                    self._train_segment(impl, progress, epoch, order[:cut], lrs[:cut], first, WARMUP)
                if cut < steps:
                    self._train_segment(impl, progress, epoch, order[cut:], lrs[cut:], first + cut)
                log.end(K.EPOCH_STOP, metadata={K.EPOCH_NUM: epoch})
        log.event(LK.TIMED_STEPS, self.timed.steps)  # counted from the losses the framework returned

    def _train_epoch(
        self,
        log: RunLog,
        outcome: RunOutcome,
        impl,
        data: RunData,
        schedule: Schedule,
        progress: EpochProgress,
        epoch: int,
    ) -> bool:
        """One epoch between epoch_start and epoch_stop, and the evaluations that fall in it; True when one
        reached the target. An evaluation inside the epoch sits between its epoch_start and epoch_stop; the
        one at its end follows its epoch_stop (as under rules 1.0, where every evaluation is at an epoch's
        end); a run that reaches the target inside an epoch closes the epoch there."""
        log.start(K.EPOCH_START, metadata={K.EPOCH_NUM: epoch})
        order = self.world.share(schedule.batches(epoch))
        epoch_lrs = schedule.epoch_lrs(epoch)
        first = (epoch - 1) * schedule.steps_per_epoch  # the run's index of the epoch's first step
        closed = reached = False
        for start, end, epoch_num in schedule.segments(epoch):
            self._train_segment(impl, progress, epoch, order[start:end], epoch_lrs[start:end], first + start)
            if epoch_num is None:
                continue
            if end == schedule.steps_per_epoch:
                log.end(K.EPOCH_STOP, metadata={K.EPOCH_NUM: epoch})
                closed = True
            value = self._evaluate(log, impl, data, epoch_num)
            if value is not None:
                outcome.evals.append([epoch_num, value])
                progress.evaluated(epoch_num, self.task.quality["metric"], value, self.task.quality["target"])
            if reached := self._stops_at(value):
                break
        if not closed:
            log.end(K.EPOCH_STOP, metadata={K.EPOCH_NUM: epoch})
        return reached

    def _train_segment(
        self,
        impl,
        progress: EpochProgress,
        epoch: int,
        order: np.ndarray,
        lrs: np.ndarray,
        first_step: int,
        phase: str = TIMED,
    ) -> None:
        """Steps between two evaluations (or a throughput run's warm-up or timed steps), the first of them the
        run's step `first_step` (from 0): this rank's share of every global batch (all of them in one
        process), in chunks that move rank 0's progress bar; the other ranks train them in one call. Each
        call is timed (and under rules 1.2 logged as a step window); only timed ones count in the figures."""
        chunks = progress.steps(epoch, order, lrs) if self.world.primary else [(order, lrs)]
        for rows, chunk_lrs in chunks:
            steps, seconds = self.clock.call(impl.train_steps, rows, chunk_lrs, phase=phase, first_step=first_step)
            first_step += len(rows)
            if phase == TIMED:
                self.timed.add(steps, seconds)  # one loss per step the framework ran

    def _evaluate(self, log: RunLog, impl, data: RunData, epoch_num: int | float) -> float | None:
        """The quality metric on the eval rows, scored by the task's numpy metric (the one the checker uses),
        between eval_start and eval_stop, all three with the cadence's epoch_num (levelfield.ground.eval_cadence);
        None on ranks other than 0, which never evaluate."""
        if not self.world.primary:
            return None
        log.start(K.EVAL_START, metadata={K.EPOCH_NUM: epoch_num})
        value = float(self.metric_module.score(impl.predict(data.eval_inputs), data.eval_labels))
        log.event(K.EVAL_ACCURACY, value, metadata={K.EPOCH_NUM: epoch_num})
        log.end(K.EVAL_STOP, metadata={K.EPOCH_NUM: epoch_num})
        return value

    def _stops_at(self, value: float | None) -> bool:
        """Rank 0's stop-at-target decision, on every rank (a collective: all of them stop together).
        Without stop_at_target the run trains all max_epochs, or until `calibration_stop` (calibration
        curves; never a result)."""
        threshold = self.task.quality["target"] if self.o.stop_at_target else self.o.calibration_stop
        return self.world.agree(threshold is not None and reaches_target(value, threshold))

    def _keep_success(self, outcome: RunOutcome, impl, elapsed_s: float) -> None:
        """A successful run's time to train (run_start to run_stop), and its weights when asked for (rank 0)."""
        outcome.time_to_train_s = elapsed_s
        if self.o.save_weights and self.world.primary:
            from levelfield.reference.weights import save_weights

            save_weights(self.o.out / f"weights_{outcome.index}.npz", impl.export(), overwrite=self.o.force)

    def _mark_aborted(self, outcome: RunOutcome, error: BaseException) -> bool:
        """Record why a run stopped early; True when a signal stopped it (now, or earlier while a run's end
        was logged). With several processes, another rank's failure surfaces here as a collective's error."""
        interrupted = isinstance(error, RunInterrupted) or self.interrupted_by is not None
        outcome.status, outcome.reason = "aborted", "interrupted" if interrupted else "error"
        return interrupted

    def _meter(self, impl) -> ResourceMeter | None:
        """A started meter of the run's process tree (every rank's, walked from the launcher) and, on a GPU,
        NVML's counters of the GPUs the run computes on (rank 0 reads all N): rank 0 only."""
        if not self.world.primary:
            return None
        return open_meter(sample_interval_ms(self.suite), impl.device, self.world.size)

    def _finish(
        self, log, outcome: RunOutcome, impl=None, meter: ResourceMeter | None = None, run_start_ms: int | None = None
    ) -> bool:
        """Log the run's resource use and run_stop, all stamped with run_stop's time; returns True (run_stop
        written). Without a meter (other ranks; a run that failed before run_start) no cost figure is logged."""
        self._finishing = True
        stop_ms = now_ms()
        outcome.peak_rss_mib = peak_rss_mib()
        log.event(LK.PEAK_RSS_MIB, outcome.peak_rss_mib, time_ms=stop_ms)
        if impl is not None:
            outcome.peak_device_memory_mib = impl.peak_device_memory_mib()
        if self.world.primary:
            outcome.train_samples_per_s, outcome.step_time_ms = self.timed.samples_per_s(), self.timed.step_time_ms()
            if self.o.scaling_reference is not None:
                reference = self.o.scaling_reference["train_samples_per_s"]
                outcome.scaling_efficiency = scaling_efficiency(outcome.train_samples_per_s, self.world.size, reference)
        cost: list[tuple[str, object]] = []
        if meter is not None and run_start_ms is not None:
            figures = meter.stop()
            if meter.gpu is not None:
                outcome.device_memory_used_mib = meter.gpu.memory_used_mib()
            gpu_j = figures["gpu_energy_j"]
            outcome.energy_j = gpu_j if isinstance(gpu_j, float) else None
            cost = training_figures(figures, self.o.system, self.world.nodes, (stop_ms - run_start_ms) / 1000)
            outcome.resources = {key.removeprefix("levelfield_"): value for key, value in cost}
        for key, value in (
            (LK.PEAK_DEVICE_MEMORY_MIB, outcome.peak_device_memory_mib),
            (LK.DEVICE_MEMORY_USED_MIB, outcome.device_memory_used_mib),
            (LK.TRAIN_SAMPLES_PER_S, outcome.train_samples_per_s),
            (LK.STEP_TIME_MS, outcome.step_time_ms),
            (LK.SCALING_EFFICIENCY, outcome.scaling_efficiency),
            *cost,
        ):
            if value is not None:  # absent, never made up: no GPU, or no step timed
                log.event(key, value, time_ms=stop_ms)
        log.end(K.RUN_STOP, metadata={K.STATUS: outcome.status, "reason": outcome.reason}, time_ms=stop_ms)
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
            "task": self.task.id,
            "framework": self.o.framework,
            "mode": self.o.mode,
            "profile": self.o.profile,
            "rules_version": self.suite.version,
            "world_size": self.world.size,
            "launcher": self.world.launcher,
            "quality_metric": self.task.quality["metric"],
            "quality_target": self.task.quality["target"],
            "runs_requested": self.runs,
            "throughput_only_steps": None if self.plan is None else self.plan.timed_steps,  # None: time to accuracy
            # rules 1.2: a throughput result, and the warm-up steps its figures exclude (None: not one)
            "throughput_warmup_steps": self.plan.warmup_steps if self.plan is not None and self.plan.result else None,
            "interrupted_by": self.interrupted_by,
            "runs": [asdict(o) for o in outcomes],
            # None for throughput-only runs, which have no time to train (not even a failed one)
            "time_to_train_s": time_to_train_figures(outcomes, self.settings["olympic_drop"])
            if outcomes and self.plan is None
            else None,
            "time_to_first_step_s": spread([o.time_to_first_step_s for o in outcomes]) if outcomes else None,
            "throughput": throughput_only.figures(outcomes),  # median and range over the runs
            # --scaling: these runs' median samples/s over N x the 1-process reference's (ground/scaling.py)
            "scaling": None
            if self.o.scaling_reference is None
            else scaling_figures([o.train_samples_per_s for o in outcomes], self.world.size, self.o.scaling_reference),
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
    from levelfield.harness.compliance import peer_compliance
    from levelfield.rules import load_suite

    suite = load_suite(summary["rules_version"], rules_dir)
    # A throughput-only log has no evaluation, which every MLPerf training log needs: not judged (None).
    judged = summary.get("throughput_only_steps") is None
    for entry in summary["runs"]:
        entry["peer_compliance"] = peer_compliance(Path(entry["log"]), suite)[0] if judged else None
    path = Path(out) / "summary.json"
    atomic_write_text(path, json.dumps(summary, indent=2) + "\n", overwrite=True)
    return path
