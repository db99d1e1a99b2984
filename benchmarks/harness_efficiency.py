"""How much the LoadGen runner adds to a framework's own predict: inference harness efficiency.

    python -m benchmarks harness                       # ctr-dlrm, every framework (make bench)
    python -m benchmarks harness --frameworks jax --quick --out /tmp/bench

Per framework, on the same compiled implementation, weights (init seed 0)
and eval rows (the task's submission eval set as the QSL):

- Offline: samples/s LoadGen reports for one query of `offline_samples`
  samples through the runner (its chunk size sized from the system, as in a
  real run), against a raw loop that gathers, predicts and turns into
  responses the same number of random rows in the same chunks.
  Ratio = runner / raw (1.0: the harness costs nothing).
- SingleStream: p90 latency LoadGen reports through the runner against the
  p90 of the same work (gather one row, predict, to_response) timed in a raw
  loop; the difference is the harness's added microseconds per query.
- Both with LoadGen's fast SUT and its plain one (`--sut`), so the choice in
  `sut.FAST_SUT_DEFAULT` rests on numbers.
- Framework `none` (reference/null_model.py at zero cost): a predict that
  returns zeros at once, so the figures are the harness's own floor, free of
  any framework's noise.
- ONNX Runtime (inference only) beside the three: its session's run on the
  model file levelfield wrote from the same weights, under the first rules
  version that names it (1.2), whose inference settings are 1.1's.
- Server: the largest target QPS LoadGen judges VALID under the task's own
  latency bound (the submission profile's), found by `levelfield infer
  --find-peak`'s search with shorter runs (`server_run_ms`, at least
  SERVER_MIN_QUERIES queries so early stopping can pass); reported with its
  ratio to the runner's Offline throughput in the same run.

The raw loops run in a thread of their own, as the runner's predicts run on
its compute thread, and nothing framework-related runs on the main thread:
PyTorch's OpenMP pool belongs to the thread that made it, and a second live
pool makes every predict of the other thread slower (docs/inference.md, "One
thread for the model"), which would bias either side.

Raw figures, the runner's figures and the ratios all go into the result, as
they are measured; nothing is asserted on them.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TITLE = (
    "harness efficiency: the LoadGen runner against a raw predict loop over the same rows "
    "(ratio 1.0 = the harness costs nothing)"
)
# none: the harness alone (a zero-cost predict); onnxruntime serves inference only, under the rules version
# that names it (benchmarks/options.py, inference_rules_version).
DEFAULT_FRAMEWORKS = ("none", "pytorch", "tensorflow", "jax", "onnxruntime")
SUT_KINDS = ("fast", "plain")
MAX_LIMIT_CALLS = 500  # of each timed batch loop in server_limits (the harness's floor takes microseconds per call)
SERVER_MIN_QUERIES = 662  # enough for LoadGen's early stopping at the 99th percentile (as MLPerf's MultiStream)


# Full-length Offline queries of the slower models: about 7 s each through the runner on this
# 2-core CPU (fmnist-resnet answers ~2,400 samples/s, seq-transformer ~10,000), as
# 262,144 ctr-dlrm samples take 1-2 s; a quick run keeps its 4,096 samples for every task.
FULL_OFFLINE_SAMPLES_BY_TASK = {"fmnist-resnet": 16_384, "seq-transformer": 65_536}


def offline_samples(default: int, by_task: dict, task_id: str) -> int:
    """The Offline query length for `task_id`: its own entry of `by_task`, else `default`."""
    return by_task.get(task_id, default)


@dataclass(frozen=True)
class Config:
    """Run lengths; FULL for `make bench` (~1-2 min per framework), QUICK for tests (seconds)."""

    offline_samples: int  # samples in the one Offline query (runner) and in the raw loop
    singlestream_s: float  # LoadGen min duration of the SingleStream run; also the raw loop's length
    server_run_ms: int  # LoadGen min duration of each Server search run
    server_steps: int  # at most this many Server search runs (find_peak's MAX_STEPS)
    repeats: int  # best-of repeats of each raw measurement and Offline run
    limits_s: float  # length of each timed batch loop of server_limits
    offline_samples_by_task: dict = field(default_factory=dict)  # tasks whose query differs from offline_samples


FULL = Config(
    offline_samples=262_144,
    singlestream_s=5.0,
    server_run_ms=10_000,
    server_steps=10,
    repeats=2,
    limits_s=2.0,
    offline_samples_by_task=FULL_OFFLINE_SAMPLES_BY_TASK,
)
QUICK = Config(offline_samples=4096, singlestream_s=0.3, server_run_ms=300, server_steps=2, repeats=1, limits_s=0.1)


def in_thread(function, *args):
    """function(*args) in a new thread (see the module docstring), its result or its exception."""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = function(*args)
        except BaseException as e:
            outcome["error"] = e

    worker = threading.Thread(target=target, name="levelfield-bench-raw")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _user_conf(path: Path, text: str) -> Path:
    path.write_text("version: 1\n" + text)
    return path


class Bench:
    """One task x framework: a compiled implementation shared by the raw loops and the runner's runs."""

    def __init__(self, task_id: str, framework: str, config: Config | None, workdir: Path):
        """`config` sets the raw loops' lengths; None when only runner runs are made (benchmarks/noise.py)."""
        from benchmarks.options import inference_rules_version
        from levelfield.ground.registry import load_implementation, task_module
        from levelfield.harness import runner
        from levelfield.reference.interface import Recipe
        from levelfield.reference.null_model import CostModel, NullImplementation

        self.task_id, self.framework, self.config, self.workdir = task_id, framework, config, workdir
        self.rules_version = inference_rules_version(framework)  # None: the default version
        suite = runner.cached_suite(self.rules_version, None)
        self.task = suite.task(task_id)
        self.inputs_module, self.spec = task_module(self.task, "inputs"), task_module(self.task, "model_spec")
        n_eval = int(self.task.dataset["eval_samples"])
        self.inputs, _ = runner.cached_eval_set(self.rules_version, None, task_id, None, n_eval)
        self.n = n_eval
        if framework == "none":
            self.impl = NullImplementation(self.task, CostModel())
        else:
            self.impl = load_implementation(task_id, framework)(Recipe.from_task(self.task))
        # Not on the main thread: an OpenMP pool made there would slow every later thread's predicts
        # (PyTorch; docs/inference.md "One thread for the model"). Each raw loop and each runner run
        # uses a thread of its own, which ends before the next one starts.
        in_thread(self.impl.load, self.spec.init_weights(0))
        self.rng = np.random.default_rng(0)
        self.runs = 0

    # -- the raw work a harness cannot avoid -------------------------------------------------
    def _answer(self, indices: np.ndarray) -> np.ndarray:
        return self.spec.to_response(self.impl.predict({k: v[indices] for k, v in self.inputs.items()}))

    def raw_offline_samples_per_s(self, samples: int, batch_size: int) -> float:
        indices = self.rng.integers(0, self.n, size=samples)
        self._answer(indices[:batch_size])  # compile / warm this chunk shape
        best_s = float("inf")
        for _ in range(self.config.repeats):
            started = time.perf_counter()
            for start in range(0, samples, batch_size):
                self._answer(indices[start : start + batch_size])
            best_s = min(best_s, time.perf_counter() - started)
        return samples / best_s

    def batch_ms(self, size: int, calls: int, arrivals_per_s: float = 0.0) -> float:
        """Median wall time of `calls` batches of `size` rows; with `arrivals_per_s` > 0, while another
        thread wakes at Poisson times of that rate and takes the GIL briefly, as LoadGen's issue thread
        does for every Server query (the interference a busy issue thread alone causes)."""
        indices = self.rng.integers(0, self.n, size=size)
        self._answer(indices)  # warm this shape
        stop, issued = threading.Event(), []
        waker = None
        if arrivals_per_s > 0:
            gaps_s = np.random.default_rng(1).exponential(1.0 / arrivals_per_s, size=1 << 20)

            def wake():
                for gap_s in gaps_s:
                    if stop.wait(gap_s):
                        return
                    issued.append(gap_s)  # a Python-level callback's worth of GIL work

            waker = threading.Thread(target=wake, name="levelfield-bench-arrivals")
            waker.start()
        try:
            times_ms = []
            for _ in range(calls):
                started = time.perf_counter()
                self._answer(indices)
                times_ms.append((time.perf_counter() - started) * 1000)
        finally:
            stop.set()
            if waker is not None:
                waker.join()
        return float(np.median(times_ms))

    def raw_single_latencies_ns(self) -> np.ndarray:
        for i in range(20):
            self._answer(np.array([i]))
        latencies, deadline = [], time.perf_counter() + self.config.singlestream_s
        while time.perf_counter() < deadline or len(latencies) < 100:
            index = np.array([self.rng.integers(self.n)])
            started = time.perf_counter_ns()
            self._answer(index)
            latencies.append(time.perf_counter_ns() - started)
        return np.array(latencies)

    # -- through the runner ------------------------------------------------------------------
    def options(self, scenario: str, conf_text: str, sut: str | None = None):
        """InferOptions of one performance run with these user settings, in a folder of its own."""
        from levelfield.harness.options import InferOptions
        from levelfield.reference.null_model import CostModel

        self.runs += 1
        conf = _user_conf(self.workdir / f"user-{self.runs}.yaml", conf_text)
        return InferOptions(
            task_id=self.task_id,
            framework=self.framework,
            scenario=scenario,
            mode="performance",
            out=self.workdir / f"{self.framework}-{scenario}-{self.runs}",
            profile="submission",
            user_conf=conf,
            sut=sut,
            progress=False,
            repeats=1,
            null_cost=CostModel() if self.framework == "none" else None,
            rules_version=self.rules_version,
        )

    def infer(self, scenario: str, conf_text: str, sut: str | None = None) -> tuple[dict, Path]:
        """(result.json content, run folder) of one performance run with these user settings."""
        from levelfield.harness.runner import infer

        options = self.options(scenario, conf_text, sut)
        return infer(options, impl=self.impl), options.out


def percentile_nearest_rank(values: np.ndarray, q: float) -> float:
    """LoadGen's percentile: nearest rank."""
    ordered = np.sort(values)
    return float(ordered[max(0, int(np.ceil(q * len(ordered))) - 1)])


def offline_conf(samples: int) -> str:
    """User settings for one Offline query of exactly `samples` samples; the runner sizes its chunks."""
    # min_duration 1 ms: the query holds exactly min_sample_count samples, however fast the model.
    return f"offline: {{min_duration_ms: 1, min_sample_count: {samples}}}\n"


def offline(bench: Bench) -> dict:
    samples = offline_samples(bench.config.offline_samples, bench.config.offline_samples_by_task, bench.task_id)
    conf = offline_conf(samples)
    runner, batch = {}, None
    for kind in SUT_KINDS:
        results = [bench.infer("offline", conf, kind)[0] for _ in range(bench.config.repeats)]
        runner[kind] = max(r["samples_per_s"] for r in results)
        batch = int(results[0]["sizing"]["chosen"].get("batch_size", batch or 1))
    raw = in_thread(bench.raw_offline_samples_per_s, samples, batch)  # the chunk the runner chose
    return {
        "samples": samples,
        "batch_size": batch,
        "raw_samples_per_s": raw,
        "runner_samples_per_s": runner,
        "ratio": {kind: value / raw for kind, value in runner.items()},
    }


def singlestream(bench: Bench) -> dict:
    raw_ns = in_thread(bench.raw_single_latencies_ns)
    raw_p90_us = percentile_nearest_rank(raw_ns, 0.90) / 1000
    duration_ms = int(bench.config.singlestream_s * 1000)
    # The expected latency tells LoadGen how many queries to pre-generate for the duration.
    expected_ms = max(percentile_nearest_rank(raw_ns, 0.5) / 1e6, 0.001)
    conf = (
        f"singlestream: {{min_duration_ms: {duration_ms}, min_query_count: 100, "
        f"expected_latency_ms: {expected_ms:.6f}}}\n"
    )
    runner_us, queries = {}, {}
    for kind in SUT_KINDS:
        result, _ = bench.infer("singlestream", conf, kind)
        runner_us[kind] = result["p90_latency_ms"] * 1000
        queries[kind] = result["query_count"]
    return {
        "raw_queries": len(raw_ns),
        "raw_p90_us": raw_p90_us,
        "runner_p90_us": runner_us,
        "runner_queries": queries,
        "added_p90_us": {k: v - raw_p90_us for k, v in runner_us.items()},
    }


def server(bench: Bench, offline_samples_per_s: float) -> dict:
    """The largest target QPS LoadGen judges VALID under the task's latency bound (find_peak's search),
    with its ratio to the runner's Offline throughput."""
    from levelfield.ground.errors import UserError
    from levelfield.harness.find_peak import find_peak

    conf = f"server: {{min_duration_ms: {bench.config.server_run_ms}, min_query_count: {SERVER_MIN_QUERIES}}}\n"
    options = bench.options("server", conf)
    try:
        document = find_peak(options, bench.impl, max_steps=bench.config.server_steps, report=lambda line: None)
    except UserError:  # no target was VALID: the report still lists every step
        document = json.loads((options.out / "find_peak.json").read_text())
    rules = bench.task.loadgen_settings("submission", "server")
    peak = document["peak"]
    qps = peak["target_qps"] if peak else None
    return {
        "max_qps": qps,
        "latency_bound_ms": rules["latency_bound_ms"],
        "latency_percentile": rules["latency_percentile"],
        "run_ms": bench.config.server_run_ms,
        "max_batch_size": peak["max_batch_size"] if peak else None,
        "peak_batches": peak["batches"] if peak else None,
        "limits": server_limits(bench, qps, peak["batches"], offline_samples_per_s) if peak else None,
        "steps": [
            {
                "target_qps": step["target_qps"],
                "met": step["valid"],
                "samples_per_s": step["samples_per_s"],
                "batches": step["batches"],
            }
            for step in document["steps"]
        ],
        "ratio_to_offline": (qps / offline_samples_per_s) if qps else None,
    }


def server_limits(bench: Bench, qps: float, batches: dict, offline_samples_per_s: float) -> dict:
    """Where Server's throughput goes, as factors whose product is exactly Server QPS / Offline samples/s:

    - batch_size: the rate of the peak's mean batch size timed alone, against Offline's (the latency
      bound caps Server's batches; Offline takes the chunk the runner sized for throughput);
    - load: that batch alone against the same batches timed during the Server run (the SUT's threads,
      LoadGen's issue thread, responses);
    - busy: the share of the run the compute thread spent in batches (1.0: never idle).

    `arrivals_ms` isolates one part of `load`: the same batch while a thread only wakes at the peak's
    Poisson rate and takes the GIL, as LoadGen's issue thread does."""
    size = max(1, round(batches["mean_size"]))
    calls = min(MAX_LIMIT_CALLS, max(5, int(bench.config.limits_s * 1000 / max(batches["mean_ms"], 1e-3))))
    alone_ms = in_thread(bench.batch_ms, size, calls)
    arrivals_ms = in_thread(bench.batch_ms, size, calls, qps)
    under_load_ms = batches["mean_ms"]
    factors = {
        "batch_size": (batches["mean_size"] / alone_ms * 1000) / offline_samples_per_s,
        "load": alone_ms / under_load_ms,
        "busy": qps * under_load_ms / 1000 / batches["mean_size"],
    }
    return {
        "size": size,
        "calls": calls,
        "alone_ms": alone_ms,
        "arrivals_ms": arrivals_ms,
        "under_load_ms": under_load_ms,
        "factors": factors,
    }


def run(options, config: Config) -> dict:
    """{"task", "config", "frameworks": {framework: {framework_version, offline, singlestream, server}}}."""
    results = {}
    frameworks = options.frameworks if options.frameworks is not None else list(DEFAULT_FRAMEWORKS)
    with tempfile.TemporaryDirectory(prefix="levelfield-bench-") as tmp:
        for framework in frameworks:
            started = time.perf_counter()
            bench = Bench(options.task, framework, config, Path(tmp))
            entry = {"framework_version": bench.impl.version(), "device": bench.impl.device}
            entry["offline"] = offline(bench)
            options.report(format_offline(framework, entry["offline"]))
            entry["singlestream"] = singlestream(bench)
            options.report(format_singlestream(framework, entry["singlestream"]))
            entry["server"] = server(bench, entry["offline"]["runner_samples_per_s"]["fast"])
            options.report(format_server(framework, entry["server"]))
            entry["bench_s"] = time.perf_counter() - started
            results[framework] = entry
    return {"task": options.task, "frameworks": results}


def format_offline(framework: str, r: dict) -> str:
    runs = ", ".join(f"{k} SUT {v:,.0f}/s (x{r['ratio'][k]:.2f})" for k, v in r["runner_samples_per_s"].items())
    return (
        f"{framework:10s} Offline       {r['samples']} samples, chunks of {r['batch_size']}: raw loop "
        f"{r['raw_samples_per_s']:,.0f} samples/s; runner {runs}"
    )


def format_singlestream(framework: str, r: dict) -> str:
    runs = ", ".join(f"{k} SUT {v:.1f} us (+{r['added_p90_us'][k]:.1f})" for k, v in r["runner_p90_us"].items())
    return f"{framework:10s} SingleStream  p90 latency: raw predict {r['raw_p90_us']:.1f} us; runner {runs}"


def format_server(framework: str, r: dict) -> str:
    if r["max_qps"] is None:
        tried = ", ".join(f"{step['target_qps']:.0f}" for step in r["steps"])
        return f"{framework:10s} Server        no target QPS tried ({tried}) met the {r['latency_bound_ms']:g} ms bound"
    limits = r["limits"]
    cost = ""
    if limits:
        f = limits["factors"]
        cost = (
            f"; batches of {limits['size']} took {limits['under_load_ms']:.1f} ms under load, "
            f"{limits['alone_ms']:.1f} ms alone, {limits['arrivals_ms']:.1f} ms beside Poisson wake-ups "
            f"= batch size x{f['batch_size']:.2f} * load x{f['load']:.2f} * busy x{f['busy']:.2f}"
        )
    return (
        f"{framework:10s} Server        max QPS VALID with p{round(100 * r['latency_percentile'])} <= "
        f"{r['latency_bound_ms']:g} ms in {r['run_ms'] / 1000:g} s runs: {r['max_qps']:,.0f} "
        f"(x{r['ratio_to_offline']:.3g} of the runner's Offline throughput){cost}"
    )


def rows(result: dict) -> list[dict]:
    """Summary rows per framework, one per goal: Offline and SingleStream against the raw loop (fast SUT),
    Server against Offline."""
    out = []
    for framework, e in result["frameworks"].items():
        o, single, server_result = e["offline"], e["singlestream"], e["server"]
        who = f"{result['task']} / {framework} {e['framework_version']}"
        out.append(
            {
                "compared": f"{who}: Offline, runner (fast SUT) vs raw predict loop",
                "figures": f"{o['runner_samples_per_s']['fast']:,.0f} vs {o['raw_samples_per_s']:,.0f} samples/s",
                "ratio": o["ratio"]["fast"],
                "goal": "harness_offline_ratio",
                "value": o["ratio"]["fast"],
            }
        )
        added = single["added_p90_us"]["fast"]
        out.append(
            {
                "compared": f"{who}: SingleStream p90, runner (fast SUT) vs raw single-sample predict",
                "figures": f"+{added:.1f} us over {single['raw_p90_us']:.1f} us",
                "ratio": None,
                "ratio_text": "-",
                "goal": "harness_singlestream_added_p90_us",
                "value": added,
            }
        )
        qps = server_result["max_qps"]
        figures = (
            f"{qps:,.0f} vs {o['runner_samples_per_s']['fast']:,.0f} samples/s"
            if qps
            else "no target QPS met the latency bound"
        )
        if server_result["limits"]:
            f = server_result["limits"]["factors"]
            figures += f" = batch size x{f['batch_size']:.2f} * load x{f['load']:.2f} * busy x{f['busy']:.2f}"
        out.append(
            {
                "compared": f"{who}: Server max valid target QPS vs Offline throughput",
                "figures": figures,
                "ratio": server_result["ratio_to_offline"],
                "goal": "harness_server_to_offline_ratio",
                "value": server_result["ratio_to_offline"],
            }
        )
        if framework == "none":  # the harness's own Server floor, an absolute figure
            out.append(
                {
                    "compared": f"{who}: Server max valid target QPS, the harness alone",
                    "figures": figures,
                    "ratio": None,
                    "ratio_text": "-",
                    "goal": "harness_server_floor_qps",
                    "value": qps,
                }
            )
    return out
