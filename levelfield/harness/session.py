"""Everything an inference run does with the model, on one thread: load, measure, size, LoadGen runs.

    session = Session(options, eff, impl, weights, qsl, respond_rows, state, max_predict_batch=1024)
    outcome = session.run()          # on the runner's compute thread; the main thread only waits

Why one thread: PyTorch's OpenMP pool belongs to the thread that calls it;
weights loaded on the main thread and predicts made on LoadGen's thread made
fmnist-resnet 4x slower per sample at batch 1 on this CPU (docs/inference.md).
So this thread loads the weights, measures the batch costs (sizing.py), warms
up every batch shape, and then either calls LoadGen's StartTest itself
(SingleStream, MultiStream and Offline queries are issued on the calling
thread, so their predicts run here) or, for Server, starts StartTest on a
helper thread and answers the queued samples here (`ServerSUT.serve`).

Performance mode checks the sizes with LoadGen before the timed runs (an
Offline query of about OFFLINE_PROBE_S; a short Server run at the sized
target, whose latency must keep SERVER_PROBE_MARGIN of the bound free; both
bounded in samples or queries, as batch costs cannot see LoadGen's work) and
then runs the profile's repeats into run_<i>/. A timed run whose LoadGen
verdict shows the sizes were wrong (sizing.size_again) changes them and the
repeats start over, at most sizing.MAX_RESIZES times, so every repeat of a
result runs with the same settings. Accuracy mode is one LoadGen run in --out.

Each timed run is metered over StartTest (run_meter.py: the process tree's
peak memory, the CPU shares of the tree, the host and other processes, energy;
result.json's `runs[i].resources`), and the host's load is read over the
sizing too. In a non-submittable profile (smoke, demo), a timed run that comes
out INVALID while other processes took sizing.HOST_LOAD_RISE more of the host
than during sizing was broken by the host, not by its sizes: it is sized again
from a fresh probe and the repeats start over, at most
sizing.MAX_HOST_LOAD_RERUNS times, said on stderr and recorded under
`sizing.host_load_reruns`. A submission run is never re-run for it.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.ground.fsutil import atomic_write_text
from levelfield.ground.meter import ResourceMeter
from levelfield.harness import loadgen_config, sizing
from levelfield.harness import sut as sut_module
from levelfield.harness.loadgen_results import read_detail
from levelfield.harness.run_meter import open_meter

if TYPE_CHECKING:
    import numpy as np

    from levelfield.harness.options import InferOptions
    from levelfield.harness.run_state import RunState
    from levelfield.reference.interface import Implementation
    from levelfield.reference.null_model import NullImplementation

RUN_FOLDER = "run_{}"  # performance repeats: run_1, run_2, ... (MLPerf's performance/run_1)
OFFLINE_PROBE_S = 0.5  # the Offline probe query: about this long at the measured speed
SERVER_PROBE_MS = 500  # the Server probe run: at least this long ...
SERVER_PROBE_QUERIES = 128  # ... and this many queries
# The batch costs time predict and the response rows, not LoadGen's own work per sample and per
# query, so on a fast system they promise far more than LoadGen can move: a zero-cost model's batch
# costs said 62M samples/s where LoadGen completed 1.4-1.9M (Offline) and 143k single-sample queries/s
# (Server) on the 2-core CPU. A probe sized from that promise ran 18 s (Offline) and 54 s (Server,
# 7.8M queries generated) instead of 0.5 s. So the first probe is bounded in work, not only in
# time: at most these many samples / queries, about half a second of LoadGen at those rates (less on
# a faster host); a capped Offline probe that ends in under a quarter of OFFLINE_PROBE_S is followed
# by one sized from its measured rate, and an overloaded Server probe already offers half of what it
# completed next.
OFFLINE_FIRST_PROBE_MAX_SAMPLES = 2**20
SERVER_PROBE_MAX_QUERIES = 2**16
SERVER_PROBE_MARGIN = 0.75  # its latency at the rules' percentile must stay under this x the bound
SERVER_PROBE_TRIES = 5  # halving the target each time it does not


def server_probe_window(target_qps: float) -> tuple[int, float]:
    """(min_duration_ms, target_qps) of a Server probe: SERVER_PROBE_MS long unless LoadGen would then
    generate more than SERVER_PROBE_MAX_QUERIES queries (target x duration, all made before it starts);
    LoadGen's duration has a resolution of 1 ms, so a target above the cap per millisecond is lowered."""
    duration_ms = max(1, min(SERVER_PROBE_MS, int(1000 * SERVER_PROBE_MAX_QUERIES / target_qps)))
    return duration_ms, min(target_qps, 1000 * SERVER_PROBE_MAX_QUERIES / duration_ms)


class RunCancelled(BaseException):
    """The main thread asked this thread to stop (an interrupt) between two predicts."""


@dataclass
class LoadGenOutcome:
    """One LoadGen run: its folder, the detail log as {key: value}, LoadGen's errors, wall time."""

    folder: Path
    records: dict
    errors: list[str]
    run_s: float
    predict_calls: int
    batch_sizes: list[int]  # Server's batches, in order
    batch_ms: list[float]  # ... and what each took (predict + response rows)
    fast: bool
    # A timed run's cost over StartTest (levelfield/ground/meter.py figures, and the samples answered);
    # None for the probes and the accuracy run, which no figure is published from
    resources: dict | None = None


@dataclass
class SessionOutcome:
    warmup_s: float
    sizing: dict
    runs: list[LoadGenOutcome]
    resizes: list[dict] = field(default_factory=list)


@dataclass
class Current:
    """What the main thread's progress bar shows: the LoadGen run in progress."""

    label: str
    eff: dict
    started: float
    sut: object


class Session:
    def __init__(
        self,
        options: InferOptions,
        eff: dict,
        impl: Implementation | NullImplementation,
        weights: dict[str, np.ndarray],
        qsl: sut_module.SampleLibrary,
        respond_rows: sut_module.RespondRows,
        state: RunState,
        *,
        max_predict_batch: int,
        sample_interval_ms: int | None = None,
    ):
        self.options, self.eff, self.impl, self.weights = options, eff, impl, weights
        self.qsl, self.respond_rows, self.state = qsl, respond_rows, state
        self.max_predict_batch = max_predict_batch
        # The meter's interval for the timed runs (rules' measurement.sample_interval_ms); None: not metered
        self.sample_interval_ms = sample_interval_ms
        self.sizing_others_share: float | None = None  # the host's load while the sizes were measured
        self.costs_ms: dict[int, float] = {}  # batch size -> median ms from the sizing probe
        self.label = f"{options.task_id}/{options.framework} {options.scenario} {options.mode}"

    # -- the model, outside LoadGen ---------------------------------------------------------
    def answer(self, indices: np.ndarray) -> None:
        """The SUT's work for these rows, untimed by LoadGen: warm-up and batch-cost probes."""
        if self.state.cancelled:
            raise RunCancelled()
        self.respond_rows(self.qsl.gather(indices))

    def warm_up(self) -> None:
        for size in sut_module.warmup_batch_sizes(self.eff["scenario"], self.eff, self.max_predict_batch):
            self.answer(sut_module.warmup_indices(size, self.qsl.total_count))

    def write_settings(self, sizing_record: dict) -> None:
        """settings.json: what LoadGen is given, and how it was sized ("chosen": the sizes in use now)."""
        sizing_record["chosen"] = {key: self.eff[key] for key in sizing_record["estimated"]}
        document = {**self.eff, "sizing": sizing_record}
        atomic_write_text(self.options.out / "settings.json", json.dumps(document, indent=2) + "\n", overwrite=True)

    # -- the whole run ------------------------------------------------------------------------
    def run(self) -> SessionOutcome:
        self.state.phase = "warmup"
        started = time.perf_counter()
        self.impl.load(self.weights)
        record = self.size()
        warmup_s = time.perf_counter() - started
        self.write_settings(record)
        self.state.phase = "loadgen"
        if self.eff["mode"] == "accuracy":
            return SessionOutcome(warmup_s, record, [self.loadgen_run(self.options.out, self.eff, self.label)])
        runs, resizes = self.repeats(record)
        return SessionOutcome(warmup_s, record, runs, resizes)

    def size(self) -> dict:
        """Measure the batch costs, size LoadGen from them, warm up, and (performance mode) check the sizes
        with LoadGen's probes; the sizing record. The host's load over all of it is kept in the record
        (`others_cpu_share`, and self.sizing_others_share) to tell later whether it rose."""
        meter = ResourceMeter(None).start()  # start and stop readings: the host's load, no thread
        sizes, stop_after_ms = sizing.probe_plan(self.eff, self.max_predict_batch)
        costs = sizing.measure_batch_costs(self.answer, sizes, self.qsl.total_count, stop_after_ms=stop_after_ms)
        self.costs_ms = {cost.size: cost.median_ms for cost in costs}  # seeds Server's BatchPlanner (sut.py)
        record = sizing.size_settings(self.eff, costs)
        self.warm_up()
        if self.eff["mode"] == "performance":
            record["loadgen_probe"] = self.loadgen_probe(costs)
        self.sizing_others_share = meter.stop()["others_cpu_share"]
        record["others_cpu_share"] = self.sizing_others_share
        return record

    def repeats(self, record: dict) -> tuple[list[LoadGenOutcome], list[dict]]:
        """The profile's repeats with one set of settings; sized again and started over when a run shows it:
        from a fresh probe when the host's load rose (host_load_rerun), else from LoadGen's verdict."""
        count = int(self.eff["repeats"])
        resizes: list[dict] = []
        reruns: list[dict] = []
        while True:
            runs = []
            for index in range(1, count + 1):
                folder = self.options.out / RUN_FOLDER.format(index)
                outcome = self.loadgen_run(folder, self.eff, f"{self.label} run {index}/{count}", metered=True)
                runs.append(outcome)
                share = (outcome.resources or {}).get("others_cpu_share")
                rerun = sizing.host_load_rerun(self.eff, outcome.records, self.sizing_others_share, share, reruns)
                if rerun is not None:
                    reruns.append({"run": index, **rerun})
                    print(sizing.host_load_rerun_line(self.label, reruns[-1], count, len(reruns)), file=sys.stderr)
                    self.state.phase = "warmup"
                    fresh = self.size()
                    record.clear()
                    record.update({**fresh, "resized": resizes, "host_load_reruns": reruns})
                    self.write_settings(record)
                    self.state.phase = "loadgen"
                    break
                change = sizing.size_again(self.eff, outcome.records) if len(resizes) < sizing.MAX_RESIZES else None
                if change is not None:
                    resizes.append({**change, "run": index})
                    record["resized"] = resizes
                    self.write_settings(record)
                    self.state.phase = "warmup"
                    self.warm_up()  # an Offline query of another size ends in another remainder chunk
                    self.state.phase = "loadgen"
                    break
            else:
                return runs, resizes

    # -- checking the sizes with LoadGen ------------------------------------------------------
    def loadgen_probe(self, costs: list) -> dict | None:
        """Offline: samples/s of a ~0.5 s query; Server: a target whose latency keeps a margin; else None.

        The probes run LoadGen itself, untimed for the result, into a temporary folder.
        """
        scenario, user = self.eff["scenario"], set(self.eff["user_overrides"])
        with tempfile.TemporaryDirectory(prefix="levelfield-probe-") as tmp:
            if scenario == "offline" and "expected_qps" not in user:
                return self._probe_offline(Path(tmp), costs)
            if scenario == "server" and "target_qps" not in user:
                return self._probe_server(Path(tmp))
        return None

    def _probe_offline(self, folder: Path, costs: list) -> dict:
        eff = self.eff
        # The query lasts about OFFLINE_PROBE_S at the chunk's measured rate (not at expected_qps, which
        # min_sample_count may have raised far above what the system does: 16,384 samples in 1 ms).
        chunk = next((c for c in costs if c.size == int(eff["batch_size"])), None)
        rate = chunk.samples_per_s if chunk is not None else float(eff["expected_qps"])
        probes: list[dict] = []

        def probe_with(samples: int) -> float | None:
            """LoadGen's samples/s over one untimed query of exactly `samples` (min_duration 1 ms, and the
            expected QPS that makes the query that long); None when it reports no positive rate."""
            probe = {**eff, "min_duration_ms": 1, "min_sample_count": samples, "max_duration_ms": 0}
            probe["expected_qps"] = sizing.offline_min_qps(probe)
            measured = self.loadgen_run(folder, probe, f"{self.label} probe").records.get("result_samples_per_second")
            probes.append({"samples": samples, "samples_per_s": measured})
            return measured if isinstance(measured, (int, float)) and measured > 0 else None

        wanted = max(int(eff["batch_size"]), round(rate * OFFLINE_PROBE_S))
        samples = min(wanted, OFFLINE_FIRST_PROBE_MAX_SAMPLES)
        measured = probe_with(samples)
        if measured is not None and samples < wanted and samples / measured < OFFLINE_PROBE_S / 4:
            samples = max(int(eff["batch_size"]), round(measured * OFFLINE_PROBE_S))  # from LoadGen's own rate
            measured = probe_with(samples)
        if measured is not None:
            eff["expected_qps"] = max(measured * sizing.THROUGHPUT_HEADROOM, sizing.offline_min_qps(eff))
        self.warm_up()  # the timed query's remainder chunk
        return {"samples": samples, "samples_per_s": measured, "expected_qps": eff["expected_qps"], "probes": probes}

    def _probe_server(self, folder: Path) -> dict:
        eff = self.eff
        bound_ms, tries = float(eff["latency_bound_ms"]), []
        for _ in range(SERVER_PROBE_TRIES):
            duration_ms, eff["target_qps"] = server_probe_window(float(eff["target_qps"]))
            probe = {
                **eff,
                "min_duration_ms": duration_ms,
                "min_query_count": SERVER_PROBE_QUERIES,
                "max_duration_ms": 0,
            }
            outcome = self.loadgen_run(folder, probe, f"{self.label} probe")
            key = f"result_{float(eff['latency_percentile']) * 100:.2f}_percentile_latency_ns"
            latency_ns = outcome.records.get(key)
            latency_ms = latency_ns / 1e6 if isinstance(latency_ns, (int, float)) else None
            completed = outcome.records.get("result_completed_samples_per_sec")
            tries.append(
                {
                    "target_qps": eff["target_qps"],
                    "duration_ms": probe["min_duration_ms"],
                    "latency_ms": latency_ms,
                    "completed_samples_per_s": completed,
                }
            )
            if latency_ms is not None and latency_ms <= SERVER_PROBE_MARGIN * bound_ms:
                break
            # Overloaded, the system completes what it can serve: offer SERVER_LOAD of that next.
            lower = float(eff["target_qps"]) * sizing.SERVER_BACKOFF
            if isinstance(completed, (int, float)) and completed > 0:
                lower = min(lower, completed * sizing.SERVER_LOAD)
            eff["target_qps"] = lower
        return {"tries": tries, "target_qps": eff["target_qps"]}

    # -- one LoadGen run on this thread -------------------------------------------------------
    def loadgen_run(self, folder: Path, eff: dict, label: str, *, metered: bool = False) -> LoadGenOutcome:
        """One LoadGen run into `folder`; `metered`: a timed run, whose cost over StartTest is recorded."""
        import mlperf_loadgen as lg

        folder.mkdir(parents=True, exist_ok=True)
        fast = None if self.options.sut is None else self.options.sut == "fast"
        system_under_test = sut_module.make_sut(
            eff["scenario"],
            self.respond_rows,
            self.qsl,
            batch_size=int(eff.get("batch_size", 1)),
            max_batch_size=int(eff.get("max_batch_size", 1)),
            batch_timeout_us=int(eff.get("batch_timeout_us", 0)),
            fast=fast,
            costs_ms=self.costs_ms,
        )
        log_settings = lg.LogSettings()
        log_settings.log_output.outdir = str(folder)
        log_settings.log_output.copy_summary_to_stdout = False
        log_settings.enable_trace = False  # the trace costs time per sample; summary + detail carry the results
        settings = loadgen_config.test_settings(eff)
        handle_qsl = self.qsl.construct()
        handle_sut = system_under_test.construct()
        finished = threading.Event()
        self.state.sut, self.state.loadgen = system_under_test, finished
        self.state.current = Current(label, eff, time.perf_counter(), system_under_test)
        meter = open_meter(self.sample_interval_ms, self.impl.device, 1) if metered else None
        started = time.perf_counter()
        try:
            if eff["scenario"] == "server":
                self._serve_while_loadgen_runs(
                    lg, handle_sut, handle_qsl, settings, log_settings, system_under_test, finished
                )
            else:
                try:  # queries are issued on this thread: their predicts run here
                    lg.StartTestWithLogSettings(handle_sut, handle_qsl, settings, log_settings)
                finally:
                    finished.set()
        finally:
            figures = meter.stop() if meter is not None else None
            if meter is not None and meter.gpu is not None:
                meter.gpu.close()
            self.state.current = None
        run_s = time.perf_counter() - started
        system_under_test.destroy(handle_sut)
        lg.DestroyQSL(handle_qsl)
        if system_under_test.error is not None:
            raise SutFailed(system_under_test.error)
        records, errors = read_detail(folder / "mlperf_log_detail.txt")
        return LoadGenOutcome(
            folder,
            records,
            errors,
            run_s,
            system_under_test.predict_calls,
            list(getattr(system_under_test, "batch_sizes", [])),
            list(getattr(system_under_test, "batch_ms", [])),
            system_under_test.fast,
            None if figures is None else {**figures, "samples": system_under_test.samples_done},
        )

    @staticmethod
    def _serve_while_loadgen_runs(
        lg, handle_sut, handle_qsl, settings, log_settings, system_under_test, finished: threading.Event
    ) -> None:
        failure: list[BaseException] = []

        def run_test():
            try:
                lg.StartTestWithLogSettings(handle_sut, handle_qsl, settings, log_settings)
            except BaseException as e:
                failure.append(e)
            finally:
                system_under_test.close()  # serve() returns once the queue is drained
                finished.set()

        threading.Thread(target=run_test, name="levelfield-loadgen", daemon=True).start()
        system_under_test.serve()
        finished.wait()
        if failure:
            raise failure[0]


class SutFailed(Exception):
    """predict raised inside a LoadGen run; the SUT stopped answering (`cause` holds the error)."""

    def __init__(self, cause: BaseException):
        super().__init__(f"predict raised {type(cause).__name__}: {cause}")
        self.cause = cause
