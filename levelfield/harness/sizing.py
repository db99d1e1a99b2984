"""LoadGen sized from the system under test: measured batch costs -> the settings LoadGen must be told.

    costs = measure_batch_costs(answer, probe_sizes("server", eff, 1024), stop_after_ms=...)
    record = size_settings(eff, costs)          # fills what the user left unset; returns what it chose

LoadGen generates its queries before the clock starts, from what it is told
to expect: SingleStream and MultiStream `expected_latency` (it generates twice
min_duration / expected latency queries), Offline `expected_qps` (its one
query holds expected_qps x min_duration x 1.1 samples) and Server `target_qps`
(the Poisson arrival rate, which is also the load). A value sized for another
machine makes a fast system run out of queries before min_duration (INVALID)
and a slow one run far longer than needed, or miss Server's latency bound.
So the runner measures the system first, untimed: `answer(indices)` is the
SUT's own work (gather the rows, predict, make the response rows), called on
the thread that will serve LoadGen, for the batch sizes the scenario uses.

Sizing decides how many queries LoadGen generates and, for Server, the load
offered; it never changes the rules' minimums, percentiles or bounds. A value
the user set in --user-conf wins and is recorded as such. The runner checks
the sizes with LoadGen itself (runner.py: an Offline probe query, a short
Server run) and sizes again, bounded, when a run still ends too early.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from levelfield.ground.loadgen_names import STREAM_SCENARIOS
from levelfield.harness.loadgen_config import LOADGEN_OFFLINE_SLACK

# Timing each batch size: at least MIN_CALLS calls after the untimed first one (compilation),
# more while under TIME_PER_SIZE_S, at most MAX_CALLS; the median is the cost, the p90 the Server's.
MIN_CALLS = 3
MAX_CALLS = 50
TIME_PER_SIZE_S = 0.1
# Offline chooses its chunk among powers of two from OFFLINE_FIRST_CHUNK up to the task's largest
# predict batch, and stops growing it once one call takes OFFLINE_CALL_LIMIT_S: beyond that the
# chunk no longer amortises a per-call cost (on this CPU fmnist-resnet's best chunk is 128-256 rows,
# 1024 costs 1.3-2x more per sample), and probing larger ones would only cost compile time.
OFFLINE_FIRST_CHUNK = 32
OFFLINE_CALL_LIMIT_S = 0.25
# LoadGen generates 2 x min_duration / expected_latency queries; expecting 1.25x less than the
# measured median latency makes that 2.5x the queries the run needs at the measured speed.
LATENCY_HEADROOM = 1.25
# Offline: expected_qps = measured samples/s x this, so the query lasts at least min_duration
# unless the timed run is over 1.25 x 1.1 = 1.375x faster than the probe.
THROUGHPUT_HEADROOM = 1.25
# Server: a batch may take at most this share of the latency bound, because a sample that arrives
# while a batch runs waits for it and then for its own batch (two batch costs <= the bound).
SERVER_BATCH_SHARE = 0.5
# Server's default target_qps: this share of what the batcher can serve within the bound. Half the
# capacity keeps the queue short under Poisson bursts; `levelfield infer --find-peak` finds the peak.
SERVER_LOAD = 0.5
# After a timed run that still ended too early (or, Server, too slow), the runner sizes again from
# what LoadGen measured and starts the repeats over, at most MAX_RESIZES times per `levelfield infer`.
MAX_RESIZES = 3
OFFLINE_RESIZE_HEADROOM = 1.5  # an Offline query sized again: LoadGen's measured samples/s x this
SERVER_BACKOFF = 0.5  # a Server target sized again after missing the latency bound: x this
# A run of a non-submittable profile (smoke, demo) that came out INVALID while other processes took at least
# HOST_LOAD_RISE more of the host's CPU time than while its sizes were measured was broken by the host, not
# by its settings: it is sized again from a fresh probe and the repeats run again, at most
# MAX_HOST_LOAD_RERUNS times per `levelfield infer` (issue 37: a 2-core demo host loaded to ~3.4 by other jobs
# after the probe gave a Server run sized for a lighter host, INVALID in all 3 repeats). A tenth of the host
# is a fifth of a core on 2 cores, above what the same idle host varies by between two readings. Submission
# runs are never re-run for this: their INVALID run stands, with its load recorded.
HOST_LOAD_RISE = 0.1
MAX_HOST_LOAD_RERUNS = 2


# The settings sizing chooses per scenario; a user-settings file may set any of them instead.
SIZED_KEYS_BY_SCENARIO = {
    "singlestream": {"expected_latency_ms"},
    "multistream": {"expected_latency_ms"},
    "offline": {"batch_size", "expected_qps"},
    "server": {"max_batch_size", "target_qps"},
}
SIZED_KEYS = frozenset().union(*SIZED_KEYS_BY_SCENARIO.values())


@dataclass(frozen=True)
class BatchCost:
    """The measured wall time of answer(n rows): the SUT's gather + predict + response rows."""

    size: int
    calls: int
    median_ms: float
    p90_ms: float

    @property
    def samples_per_s(self) -> float:
        return self.size / (self.median_ms / 1000)


def time_calls(answer: Callable[[np.ndarray], None], size: int, total_count: int) -> BatchCost:
    """Untimed first call (compilation), then MIN_CALLS..MAX_CALLS timed calls of `size` rows."""
    indices = np.arange(size, dtype=np.int64) % total_count
    answer(indices)
    times_ms: list[float] = []
    spent_s = 0.0
    while len(times_ms) < MIN_CALLS or (spent_s < TIME_PER_SIZE_S and len(times_ms) < MAX_CALLS):
        started = time.perf_counter()
        answer(indices)
        took_s = time.perf_counter() - started
        spent_s += took_s
        times_ms.append(took_s * 1000)
    ordered = sorted(times_ms)
    p90 = ordered[min(len(ordered) - 1, int(np.ceil(0.9 * len(ordered))) - 1)]
    return BatchCost(size, len(times_ms), statistics.median(times_ms), p90)


def measure_batch_costs(
    answer: Callable[[np.ndarray], None], sizes: list[int], total_count: int, *, stop_after_ms: float | None = None
) -> list[BatchCost]:
    """BatchCost per size, ascending; stops growing once a size's median exceeds stop_after_ms.

    Always measures the first size: a system slower than the limit still needs one figure.
    """
    costs = []
    for size in sizes:
        cost = time_calls(answer, size, total_count)
        costs.append(cost)
        if stop_after_ms is not None and cost.median_ms > stop_after_ms:
            break
    return costs


def powers_of_two(first: int, last: int) -> list[int]:
    sizes, n = [], 1
    while n <= last:
        if n >= first:
            sizes.append(n)
        n *= 2
    if not sizes or sizes[-1] != last:
        sizes.append(last)  # the task's largest batch need not be a power of two
    return sizes


def probe_plan(eff: dict, max_predict_batch: int) -> tuple[list[int], float | None]:
    """(batch sizes to time, stop growing once a median exceeds this many ms) for eff's scenario;
    no sizes when the user set everything sizing would choose."""
    scenario = eff["scenario"]
    if SIZED_KEYS_BY_SCENARIO[scenario] <= set(eff.get("user_overrides", ())):
        return [], None
    if scenario == "singlestream":
        return [1], None
    if scenario == "multistream":
        return [int(eff["samples_per_query"])], None
    if scenario == "offline":
        if "batch_size" in eff:  # the user's chunk: measure it only
            return [int(eff["batch_size"])], None
        # Never a first chunk above the rules' query: a standard task's smoke query of 2 rows would
        # otherwise be probed with four calls of 32 (over a minute of BERT-base on this CPU).
        first = min(OFFLINE_FIRST_CHUNK, max_predict_batch, int(eff.get("min_sample_count", OFFLINE_FIRST_CHUNK)))
        return powers_of_two(first, max_predict_batch), OFFLINE_CALL_LIMIT_S * 1000
    if "max_batch_size" in eff:
        return powers_of_two(1, int(eff["max_batch_size"])), None
    return powers_of_two(1, max_predict_batch), server_batch_budget_ms(eff)


def offline_min_qps(eff: dict) -> float:
    """The expected_qps at which LoadGen's one Offline query holds the rules' min_sample_count."""
    duration_s = max(eff.get("min_duration_ms", 0), 1) / 1000
    return int(eff.get("min_sample_count", 1)) / (duration_s * LOADGEN_OFFLINE_SLACK)


def server_batch_budget_ms(eff: dict) -> float:
    return float(eff["latency_bound_ms"]) * SERVER_BATCH_SHARE


def size_settings(eff: dict, costs: list[BatchCost]) -> dict:
    """Fill eff's unset LoadGen sizes from `costs`; the sizing record for settings.json / result.json.

    "estimated": the sizes derived from the batch costs (the runner's LoadGen probes and later
    resizes may change them; settings.json's top-level keys hold what LoadGen was given). Keys the
    user set (eff["user_overrides"]) are kept and listed under "user".
    """
    user = set(eff.get("user_overrides", ()))
    chosen: dict = {}

    def choose(key: str, value) -> None:
        if key not in user:
            eff[key] = value
            chosen[key] = value

    scenario = eff["scenario"]
    if not costs:  # the user set every size (probe_plan measured nothing)
        pass
    elif scenario in STREAM_SCENARIOS:
        choose("expected_latency_ms", costs[0].median_ms / LATENCY_HEADROOM)
    elif scenario == "offline":
        choose("batch_size", max(costs, key=lambda c: c.samples_per_s).size)
        chunk = next(c for c in costs if c.size == int(eff["batch_size"]))  # measured: the best or the user's
        choose("expected_qps", chunk.samples_per_s * THROUGHPUT_HEADROOM)
    else:
        cap, capacity = server_capacity(costs, server_batch_budget_ms(eff))
        choose("max_batch_size", cap)
        choose("target_qps", SERVER_LOAD * capacity)
    if scenario == "offline":  # never a query shorter than the rules' min_sample_count, whoever sized it
        eff["expected_qps"] = max(float(eff["expected_qps"]), offline_min_qps(eff))
    return {"batch_costs": [asdict(c) for c in costs], "estimated": chosen, "user": sorted(user & SIZED_KEYS)}


def server_capacity(costs: list[BatchCost], budget_ms: float) -> tuple[int, float]:
    """(batch cap, samples/s the batcher serves at that cap) under a per-batch budget.

    The cap is the largest measured size whose p90 cost fits the budget; when not even one row
    fits (a slow system), batches of whatever has arrived are still served at the smallest size's
    rate, and only a light load can meet the bound.
    """
    fitting = [c for c in costs if c.p90_ms <= budget_ms]
    best = fitting[-1] if fitting else costs[0]
    return best.size, best.size / (best.p90_ms / 1000)


def size_again(eff: dict, records: dict) -> dict | None:
    """After a timed performance run, a change to eff's sizes when LoadGen's verdict shows them wrong.

    `records`: the run's mlperf_log_detail.txt ({key: value}). SingleStream / MultiStream ran out of
    generated queries before min_duration: expected latency from LoadGen's measured mean latency.
    Offline's query ended before min_duration: expected_qps from LoadGen's measured samples/s. Server
    missed its latency bound (or early stopping): a lower target. A size the user set is never
    changed (their INVALID run stands, with LoadGen's reason). Returns {"key", "from", "to", "why"}
    (eff already changed), or None.
    """
    user = set(eff.get("user_overrides", ()))
    scenario = eff["scenario"]

    def change(key: str, value: float, why: str) -> dict:
        record = {"key": key, "from": eff[key], "to": value, "why": why}
        eff[key] = value
        return record

    if scenario in STREAM_SCENARIOS:
        mean_ns = records.get("result_mean_latency_ns")
        if (
            records.get("result_min_duration_met") is not False
            or "expected_latency_ms" in user
            or not _positive(mean_ns)
        ):
            return None
        old = float(eff["expected_latency_ms"])
        return change(
            "expected_latency_ms",
            min(old / 2, mean_ns / 1e6 / LATENCY_HEADROOM),
            f"ran out of queries before min_duration: measured mean latency {mean_ns / 1e6:.4g} ms",
        )
    if scenario == "offline":
        measured = records.get("result_samples_per_second")
        if records.get("result_min_duration_met") is not False or "expected_qps" in user or not _positive(measured):
            return None
        old = float(eff["expected_qps"])
        return change(
            "expected_qps",
            max(old * 2, measured * OFFLINE_RESIZE_HEADROOM),
            f"query finished before min_duration: measured {measured:.4g} samples/s",
        )
    missed = records.get("result_perf_constraints_met") is False or records.get("early_stopping_met") is False
    if not missed or "target_qps" in user:
        return None
    return change(
        "target_qps",
        float(eff["target_qps"]) * SERVER_BACKOFF,
        "latency bound or early stopping not met at the sized target",
    )


def host_load_rose(sizing_share: float | None, run_share: float | None) -> bool:
    """Whether other processes took HOST_LOAD_RISE or more of the host's CPU time during a run than while it
    was sized; False when either share could not be measured."""
    return sizing_share is not None and run_share is not None and run_share - sizing_share >= HOST_LOAD_RISE


def host_load_rerun(
    eff: dict, records: dict, sizing_share: float | None, run_share: float | None, done: list
) -> dict | None:
    """Whether a timed run (`records`: its detail log) is sized again from a fresh probe and the repeats run
    again because the host's load broke it: it came out INVALID while other processes' share of the host
    rose by HOST_LOAD_RISE since sizing; never under a submittable profile (its INVALID run stands); at most
    MAX_HOST_LOAD_RERUNS times (`done`: the re-runs so far). The re-run's record, or None."""
    if (
        eff.get("submittable", True)
        or records.get("result_validity") == "VALID"
        or len(done) >= MAX_HOST_LOAD_RERUNS
        or not host_load_rose(sizing_share, run_share)
    ):
        return None
    return {
        "result_validity": records.get("result_validity"),
        "sizing_others_cpu_share": sizing_share,
        "run_others_cpu_share": run_share,
        "chosen": {key: eff[key] for key in SIZED_KEYS_BY_SCENARIO[eff["scenario"]] if key in eff},
    }


def host_load_rerun_line(label: str, rerun: dict, repeats: int, done: int) -> str:
    """What a re-run after the host's load rose says on stderr (session.py)."""
    before, during = rerun["sizing_others_cpu_share"], rerun["run_others_cpu_share"]
    return (
        f"levelfield: {label} run {rerun['run']}/{repeats} came out {rerun['result_validity']} while other "
        f"processes' share of this host's CPU time rose from {before:.0%} (sizing) to {during:.0%}; sizing "
        f"again from a fresh probe and running the repeats again ({done} of at most {MAX_HOST_LOAD_RERUNS}; "
        "settings.json and result.json record it under sizing.host_load_reruns; a submission run is never re-run)"
    )


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
