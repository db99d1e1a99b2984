"""The LoadGen query sample library (QSL) and systems under test (SUTs) around a predict callable.

    qsl = SampleLibrary(eval_inputs, performance_count=1024)
    sut = make_sut("server", respond_rows, qsl, max_batch_size=64)
    handle_qsl, handle_sut = qsl.construct(), sut.construct()
    (StartTestWithLogSettings in another thread, then sut.close())  |  sut.serve()
    sut.destroy(handle_sut); lg.DestroyQSL(handle_qsl)

`respond_rows` maps {name: array [n, ...]} to the n response rows LoadGen
receives (the runner composes `impl.predict` with the task's
`model_spec.to_response`: a class id, digits, a score per sample). The harness
never imports a framework.

One predict per query for SingleStream / MultiStream (the query's rows stacked
into one batch); Offline cuts its one big query into `batch_size` chunks and
answers each chunk as it completes; Server queues samples and `serve()` answers
what has arrived in batches of up to `max_batch_size` samples.

Every predict runs on one thread, the one that warmed the model up: LoadGen
issues SingleStream, MultiStream and Offline queries on the thread that called
StartTest, which the runner makes that thread, and Server's `serve()` runs on
it while StartTest waits in another. PyTorch's OpenMP pool is per calling
thread: weights loaded on one thread and predicts on another made fmnist-resnet
4x slower per sample on this CPU (docs/inference.md).

Each SUT can be built as LoadGen's plain SUT (`issue(query_samples)`, one
Python QuerySample object per sample) or its fast SUT (`fast_issue(ids,
indices)`, two lists); `FAST_SUT_DEFAULT` holds the faster one per scenario as
measured (docs/inference.md). Both answer through the same `_answer`.

Every response points at the sample's row of the response array. LoadGen copies
those bytes into mlperf_log_accuracy.json in accuracy mode (and only then), so
the array must stay alive until QuerySamplesComplete returns, which it does
here because it is a local of the answering call.

A predict that raises is recorded in `error` and the SUT stops answering
(`abandoned`): LoadGen cannot be stopped from Python, so the runner's main
thread notices the error, records the run as failed and ends the process.
"""

from __future__ import annotations

import collections
import math
import queue
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from levelfield.ground.loadgen_names import STREAM_SCENARIOS
from levelfield.harness.loadgen_config import LOADGEN_OFFLINE_SLACK

if TYPE_CHECKING:  # annotations only: LoadGen is imported where a run needs it
    import mlperf_loadgen as lg

# `respond_rows`: a batch {name: array [n, ...]} -> its n response rows (see the module docstring).
RespondRows = Callable[[dict[str, np.ndarray]], np.ndarray]

# Plain or fast LoadGen SUT per scenario. The fast SUT measured faster in every scenario
# (docs/inference.md: Offline ~1.5x the samples/s, SingleStream ~10-30 us less at p90,
# Server lower p99); the plain one stays selectable (`--sut plain`) for comparison.
FAST_SUT_DEFAULT = {"singlestream": True, "multistream": True, "server": True, "offline": True}


class SampleLibrary:
    """The eval set as LoadGen's QSL; load/unload keep the set of loaded sample indices."""

    def __init__(self, inputs: dict[str, np.ndarray], performance_count: int):
        self.inputs = {name: np.ascontiguousarray(array) for name, array in inputs.items()}
        self.total_count = len(next(iter(self.inputs.values())))
        self.performance_count = min(performance_count, self.total_count)
        # The whole eval set is already in host memory (a few MB at most), so "loading" a
        # sample only records it; the count is checked after the run.
        self.loaded: dict[int, bool] = {}

    def load(self, indices: list[int]) -> None:
        for i in indices:
            self.loaded[int(i)] = True

    def unload(self, indices: list[int]) -> None:
        for i in indices:
            self.loaded.pop(int(i), None)

    def gather(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        """The rows of `indices` (int64 [n]) stacked into one batch per input."""
        return {name: array[indices] for name, array in self.inputs.items()}

    def construct(self) -> int:
        import mlperf_loadgen as lg

        return lg.ConstructQSL(self.total_count, self.performance_count, self.load, self.unload)


class Responder:
    """QuerySamplesComplete for one answering thread, with the response objects kept and reused.

    LoadGen's Python binding takes a list of QuerySampleResponse objects, one per sample.
    Building them was most of the harness's own cost per sample (1.9 us of the ~2.6 us a
    zero-cost model pays through the runner on this CPU; benchmarks: harness, framework
    `none`); setting two fields of a kept object costs about two thirds of that. The binding
    copies the responses into a C++ vector before QuerySamplesComplete returns, so the objects
    can be reused for the next answer; each SUT answers from one thread and owns one Responder.
    """

    def __init__(self):
        self._pool: list = []
        self._row_bytes = None

    def __call__(self, ids, rows: np.ndarray) -> None:
        """Answer samples `ids` (n) with the rows of `rows` ([n, ...], any fixed-size dtype) as their bytes."""
        import mlperf_loadgen as lg

        rows = np.ascontiguousarray(rows)
        n = len(ids)
        if len(rows) != n:  # a response row per sample, or the byte offsets below are wrong
            raise ValueError(f"{len(rows)} response rows for {n} samples")
        row_bytes = rows.nbytes // n
        pool = self._pool
        if len(pool) < n:
            pool.extend(lg.QuerySampleResponse(0, 0, 0, 0) for _ in range(n - len(pool)))  # id, data, size, n_tokens
            self._row_bytes = None
        if row_bytes != self._row_bytes:  # the same for every answer of a run: set once
            for response in pool:
                response.size = row_bytes
            self._row_bytes = row_bytes
        base = rows.ctypes.data
        for response, sample_id, address in zip(
            pool, ids, range(base, base + rows.nbytes, row_bytes), strict=False
        ):  # the pool may hold more
            response.id = sample_id
            response.data = address
        lg.QuerySamplesComplete(pool[:n])


class DirectSUT:
    """SingleStream / MultiStream: one predict per query, in LoadGen's issue thread."""

    def __init__(self, predict: RespondRows, qsl: SampleLibrary, *, fast: bool = False):
        self.predict, self.qsl, self.fast = predict, qsl, fast
        self.predict_calls = 0
        self.queries_issued = 0  # issue calls (one per query; Server: one per sample)
        self.samples_done = 0  # samples answered
        self.error: BaseException | None = None
        self.abandoned = False  # set after an error or an interrupt: answer nothing more
        self.respond = Responder()  # used only by the thread that answers

    # -- LoadGen's entry points ----------------------------------------------------
    def issue(self, samples: list[lg.QuerySample]) -> None:
        """Plain SUT: a list of lg.QuerySample (id, index)."""
        self._issue(
            [s.id for s in samples], np.fromiter((s.index for s in samples), dtype=np.int64, count=len(samples))
        )

    def fast_issue(self, ids: list[int], indices: list[int]) -> None:
        """Fast SUT: the query's ids and sample indices as two lists."""
        self._issue(ids, np.array(indices, dtype=np.int64))

    def flush(self) -> None:
        pass

    # -- answering -----------------------------------------------------------------
    def _issue(self, ids: list[int], indices: np.ndarray) -> None:
        self.queries_issued += 1
        if self.abandoned:
            return
        try:
            self._answer(ids, indices)
        except BaseException as e:
            self.fail(e)

    def _answer(self, ids: list[int], indices: np.ndarray) -> None:
        self._predict_and_respond(ids, indices)

    def _predict_and_respond(self, ids: list[int], indices: np.ndarray) -> None:
        rows = self.predict(self.qsl.gather(indices))
        self.predict_calls += 1
        self.respond(ids, rows)
        self.samples_done += len(ids)

    def fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        self.abandoned = True

    def abandon(self) -> None:
        """Answer nothing more (after an interrupt); LoadGen's thread then waits, idle, until the process ends."""
        self.abandoned = True

    # -- LoadGen handles -----------------------------------------------------------
    def construct(self) -> int:
        import mlperf_loadgen as lg

        if self.fast:
            return lg.ConstructFastSUT(self.fast_issue, self.flush)
        return lg.ConstructSUT(self.issue, self.flush)

    def destroy(self, handle: int) -> None:
        import mlperf_loadgen as lg

        (lg.DestroyFastSUT if self.fast else lg.DestroySUT)(handle)

    def close(self) -> None:
        pass


class OfflineSUT(DirectSUT):
    """Offline: the one query is predicted in chunks of `batch_size` rows, each answered when done."""

    def __init__(self, predict: RespondRows, qsl: SampleLibrary, batch_size: int, *, fast: bool = False):
        super().__init__(predict, qsl, fast=fast)
        self.batch_size = batch_size

    def _answer(self, ids: list[int], indices: np.ndarray) -> None:
        for start in range(0, len(ids), self.batch_size):
            if self.abandoned:
                return
            stop = start + self.batch_size
            self._predict_and_respond(ids[start:stop], indices[start:stop])


def padded_size(n: int) -> int:
    """The batch a compiled predict runs for n rows: the next power of two (reference/batching.py)."""
    return 1 << (n - 1).bit_length()


class BatchPlanner:
    """How many of the waiting samples the next Server batch takes, from what each padded size costs.

    Compiled predicts pad a batch to the next power of two, so 70 rows cost what 128 do: when 70
    samples wait, a batch of 64 (a full bucket) answers more samples per second than one of 70, and
    the other 6 go first in the next batch. The planner takes min(waiting, cap) rows, or the power of
    two below that when the measured costs say it answers more rows per millisecond. Costs start from
    the sizing probe's medians (none when the user pinned every sized setting) and follow the batches
    as served, under LoadGen's load (an exponentially weighted mean per padded size); a size with no
    cost yet is taken whole, as a greedy batcher would.
    """

    EWMA_WEIGHT = 0.1  # each served batch moves its padded size's cost a tenth of the way

    def __init__(self, max_batch_size: int, costs_ms: dict[int, float] | None = None):
        self.max_batch_size = max_batch_size
        self.costs_ms = {padded_size(size): ms for size, ms in (costs_ms or {}).items()}

    def size(self, waiting: int) -> int:
        """Rows for the next batch when `waiting` >= 1 samples wait."""
        n = min(waiting, self.max_batch_size)
        down = 1 << (n.bit_length() - 1)
        if down == n:
            return n
        full_ms, down_ms = self.costs_ms.get(padded_size(n)), self.costs_ms.get(down)
        if full_ms is None or down_ms is None:
            return n
        return down if down / down_ms > n / full_ms else n

    def served(self, rows: int, ms: float) -> None:
        """A batch of `rows` took `ms` (predict and responses)."""
        key = padded_size(rows)
        known = self.costs_ms.get(key)
        self.costs_ms[key] = ms if known is None else known + self.EWMA_WEIGHT * (ms - known)


class ServerSUT(DirectSUT):
    """Server: LoadGen's issue thread queues samples; `serve()`, on the runner's compute thread, answers batches.

    A batch is taken from what has arrived by the time the previous one is answered, oldest first, up
    to `max_batch_size` (sizing.py: the largest batch whose measured cost fits half the latency bound)
    and cut to a full padded size where that answers more samples per second (`BatchPlanner`), so a
    light load is answered one sample at a time and a heavy one in large batches, without waiting.
    With `batch_timeout_us` > 0 the worker also waits up to that long for a batch to fill.
    """

    _STOP = None

    def __init__(
        self,
        predict: RespondRows,
        qsl: SampleLibrary,
        max_batch_size: int,
        batch_timeout_us: int,
        *,
        fast: bool = False,
        costs_ms: dict[int, float] | None = None,
    ):
        super().__init__(predict, qsl, fast=fast)
        self.max_batch_size = max_batch_size
        self.batch_timeout_s = batch_timeout_us / 1e6
        self.planner = BatchPlanner(max_batch_size, costs_ms)
        self.batch_sizes: list[int] = []
        self.batch_ms: list[float] = []  # each batch's predict + response, to compare with the sized cost
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.waiting: collections.deque = collections.deque()  # taken off the queue, not answered yet
        self.stopping = False

    def _answer(self, ids: list[int], indices: np.ndarray) -> None:
        for item in zip(ids, indices.tolist(), strict=True):  # LoadGen issues one sample per query in Server
            self.queue.put(item)

    def _take(self, item) -> None:
        if item is self._STOP:
            self.stopping = True
        else:
            self.waiting.append(item)

    def _next_batch(self) -> list | None:
        if not self.waiting:
            if self.stopping:
                return None
            self._take(self.queue.get())
            if not self.waiting:
                return None
        deadline = time.perf_counter() + self.batch_timeout_s
        while not self.stopping and len(self.waiting) < self.max_batch_size:
            try:
                self._take(self.queue.get_nowait())  # what has arrived already
                continue
            except queue.Empty:
                pass
            remaining_s = deadline - time.perf_counter()
            if remaining_s <= 0:
                break
            try:
                self._take(self.queue.get(timeout=remaining_s))
            except queue.Empty:
                break
        return [self.waiting.popleft() for _ in range(self.planner.size(len(self.waiting)))]

    def serve(self) -> None:
        """Answer batches until close(); run by the thread that warmed up the model (runner.py)."""
        try:
            while (batch := self._next_batch()) is not None:
                if self.abandoned:
                    continue  # drain the queue without predicting until close() stops the loop
                indices = np.fromiter((index for _, index in batch), dtype=np.int64, count=len(batch))
                started = time.perf_counter()
                self._predict_and_respond([sample_id for sample_id, _ in batch], indices)
                elapsed_ms = (time.perf_counter() - started) * 1000
                self.planner.served(len(batch), elapsed_ms)
                self.batch_ms.append(elapsed_ms)
                self.batch_sizes.append(len(batch))
        except BaseException as e:
            self.fail(e)

    def close(self) -> None:
        """No more samples will come (LoadGen's StartTest returned): serve() returns after this."""
        self.queue.put(self._STOP)


def make_sut(
    scenario: str,
    predict: RespondRows,
    qsl: SampleLibrary,
    *,
    batch_size: int = 1,
    max_batch_size: int = 1,
    batch_timeout_us: int = 0,
    fast: bool | None = None,
    costs_ms: dict[int, float] | None = None,
) -> DirectSUT:
    """The scenario's SUT; `fast` None picks FAST_SUT_DEFAULT[scenario]; `costs_ms` (batch size -> median
    ms, the sizing probe's) seeds Server's BatchPlanner."""
    fast = FAST_SUT_DEFAULT[scenario] if fast is None else fast
    if scenario in STREAM_SCENARIOS:
        return DirectSUT(predict, qsl, fast=fast)
    if scenario == "offline":
        return OfflineSUT(predict, qsl, batch_size, fast=fast)
    if scenario == "server":
        return ServerSUT(predict, qsl, max_batch_size, batch_timeout_us, fast=fast, costs_ms=costs_ms)
    raise ValueError(f"unknown scenario {scenario!r}")


def warmup_batch_sizes(scenario: str, eff: dict, max_predict_batch: int) -> list[int]:
    """Every padded batch size the scenario's SUT will call predict with, to predict once before LoadGen starts.

    Compiled predicts pad each chunk to the next power of two (reference/batching.py) and cut the
    padding off on the host, so a Server batch of any length up to max_batch_size runs one of the
    power-of-two buckets warmed here. Sizes are not capped by the QSL: a performance query may
    repeat samples (see `warmup_indices`).
    """
    if scenario == "singlestream":
        return [1]
    if scenario == "multistream":
        return [int(eff["samples_per_query"])]  # every query has exactly this many samples
    if scenario == "server":
        cap = max(1, int(eff["max_batch_size"]))
        return sorted({min(1 << i, cap) for i in range(cap.bit_length() + 1)})
    # Offline: the one query's size is known (accuracy: the whole QSL; performance: LoadGen's
    # expected_qps x min_duration_s x slack, whose rounding we take both ways), so only
    # full chunks and the remainder occur.
    chunk = int(eff.get("batch_size", max_predict_batch))
    if eff["mode"] == "accuracy":
        queries = {int(eff["dataset_samples"])}
    else:
        estimate = eff["expected_qps"] * eff["min_duration_ms"] / 1000 * LOADGEN_OFFLINE_SLACK
        queries = {max(1, math.floor(estimate)), max(1, math.ceil(estimate))}
    sizes = {min(chunk, q) for q in queries} | {q % chunk for q in queries}
    return sorted(sizes - {0})


def warmup_indices(size: int, total_count: int) -> np.ndarray:
    """`size` sample indices cycling over the QSL (a warm-up batch may be larger than the QSL)."""
    return np.arange(size, dtype=np.int64) % total_count
