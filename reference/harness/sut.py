"""The LoadGen query sample library (QSL) and systems under test (SUTs) around `impl.predict`.

    qsl = SampleLibrary(eval_inputs, performance_count=1024)
    sut = make_sut("server", impl.predict, qsl, max_batch_size=16, batch_timeout_us=500)
    handle_qsl, handle_sut = qsl.construct(), sut.construct()
    lg.StartTestWithLogSettings(handle_sut, handle_qsl, settings, log_settings)
    sut.close(); lg.DestroySUT(handle_sut); lg.DestroyQSL(handle_qsl)

One predict per query for SingleStream / MultiStream (the query's rows stacked
into one batch); Offline cuts its one big query into `batch_size` chunks and
answers each chunk as it completes; Server queues samples and one worker thread
forms batches of up to `max_batch_size` samples, or fewer when the oldest has
waited `batch_timeout_us`. The harness never imports a framework: `predict`
is any callable from {name: array [n, ...]} to float32 outputs [n, ...].

Every response points at the float32 output row of its sample. LoadGen copies
those bytes into mlperf_log_accuracy.json in accuracy mode (and only then), so
the output array must stay alive until QuerySamplesComplete returns, which it
does here because it is a local of the answering call.
"""

from __future__ import annotations

import queue
import threading
import time

import numpy as np
from levelfield.reference.harness.loadgen_config import LOADGEN_OFFLINE_SLACK


class SampleLibrary:
    """The eval set as LoadGen's QSL; load/unload keep the set of loaded sample indices."""

    def __init__(self, inputs: dict[str, np.ndarray], performance_count: int):
        self.inputs = {name: np.ascontiguousarray(array) for name, array in inputs.items()}
        self.total_count = len(next(iter(self.inputs.values())))
        self.performance_count = min(performance_count, self.total_count)
        # The whole eval set is already in host memory (a few MB at most), so "loading" a
        # sample only records it; the count is checked after the run.
        self.loaded: dict[int, bool] = {}

    def load(self, indices) -> None:
        for i in indices:
            self.loaded[int(i)] = True

    def unload(self, indices) -> None:
        for i in indices:
            self.loaded.pop(int(i), None)

    def gather(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        """The rows of `indices` (int64 [n]) stacked into one batch per input."""
        return {name: array[indices] for name, array in self.inputs.items()}

    def construct(self):
        import mlperf_loadgen as lg
        return lg.ConstructQSL(self.total_count, self.performance_count, self.load, self.unload)


def respond(ids, outputs: np.ndarray) -> None:
    """Answer samples `ids` with the rows of `outputs` (float32 [n, ...]) as their response bytes."""
    import mlperf_loadgen as lg

    outputs = np.ascontiguousarray(outputs, dtype=np.float32)
    row_bytes = outputs.nbytes // len(outputs)
    base = outputs.ctypes.data
    lg.QuerySamplesComplete([lg.QuerySampleResponse(sample_id, base + i * row_bytes, row_bytes)
                             for i, sample_id in enumerate(ids)])


class DirectSUT:
    """SingleStream / MultiStream: one predict per query, in LoadGen's issue thread."""

    def __init__(self, predict, qsl: SampleLibrary):
        self.predict, self.qsl = predict, qsl
        self.predict_calls = 0

    def issue(self, samples) -> None:
        indices = np.fromiter((s.index for s in samples), dtype=np.int64, count=len(samples))
        outputs = self.predict(self.qsl.gather(indices))
        self.predict_calls += 1
        respond([s.id for s in samples], outputs)

    def flush(self) -> None:
        pass

    def construct(self):
        import mlperf_loadgen as lg
        return lg.ConstructSUT(self.issue, self.flush)

    def close(self) -> None:
        pass


class OfflineSUT(DirectSUT):
    """Offline: the one query is predicted in chunks of `batch_size` rows, each answered when done."""

    def __init__(self, predict, qsl: SampleLibrary, batch_size: int):
        super().__init__(predict, qsl)
        self.batch_size = batch_size

    def issue(self, samples) -> None:
        ids = [s.id for s in samples]
        indices = np.fromiter((s.index for s in samples), dtype=np.int64, count=len(samples))
        for start in range(0, len(ids), self.batch_size):
            stop = start + self.batch_size
            outputs = self.predict(self.qsl.gather(indices[start:stop]))
            self.predict_calls += 1
            respond(ids[start:stop], outputs)


class ServerSUT(DirectSUT):
    """Server: a queue and one worker thread that batches up to max_batch_size samples or batch_timeout_us."""

    _STOP = None

    def __init__(self, predict, qsl: SampleLibrary, max_batch_size: int, batch_timeout_us: int):
        super().__init__(predict, qsl)
        self.max_batch_size = max_batch_size
        self.batch_timeout_s = batch_timeout_us / 1e6
        self.batch_sizes: list[int] = []
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.worker = threading.Thread(target=self._work, name="levelfield-server-sut", daemon=True)
        self.worker.start()

    def issue(self, samples) -> None:
        for s in samples:  # LoadGen issues one sample per query in Server
            self.queue.put((s.id, s.index))

    def _next_batch(self) -> list | None:
        first = self.queue.get()
        if first is self._STOP:
            return None
        batch = [first]
        deadline = time.perf_counter() + self.batch_timeout_s
        while len(batch) < self.max_batch_size:
            remaining_s = deadline - time.perf_counter()
            try:
                item = self.queue.get(timeout=remaining_s) if remaining_s > 0 else self.queue.get_nowait()
            except queue.Empty:
                break
            if item is self._STOP:
                self.queue.put(self._STOP)  # answer this batch, then stop
                break
            batch.append(item)
        return batch

    def _work(self) -> None:
        try:
            while (batch := self._next_batch()) is not None:
                indices = np.fromiter((index for _, index in batch), dtype=np.int64, count=len(batch))
                outputs = self.predict(self.qsl.gather(indices))
                self.predict_calls += 1
                self.batch_sizes.append(len(batch))
                respond([sample_id for sample_id, _ in batch], outputs)
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread by close()
            self.error = e

    def close(self) -> None:
        self.queue.put(self._STOP)
        self.worker.join()
        if self.error is not None:
            raise self.error


def make_sut(scenario: str, predict, qsl: SampleLibrary, *, batch_size: int = 1,
             max_batch_size: int = 1, batch_timeout_us: int = 0):
    if scenario in ("singlestream", "multistream"):
        return DirectSUT(predict, qsl)
    if scenario == "offline":
        return OfflineSUT(predict, qsl, batch_size)
    if scenario == "server":
        return ServerSUT(predict, qsl, max_batch_size, batch_timeout_us)
    raise ValueError(f"unknown scenario {scenario!r}")


def warmup_batch_sizes(scenario: str, eff: dict, max_predict_batch: int) -> list[int]:
    """The batch sizes the scenario's SUT will call predict with, as compiled predicts bucket them.

    Compiled predicts pad each chunk to the next power of two (reference/batching.py),
    so predicting every power of two up to the largest batch compiles every shape used.
    """
    largest = {"singlestream": 1, "multistream": int(eff.get("samples_per_query", 1)),
               "server": int(eff.get("max_batch_size", 1)),
               "offline": int(eff.get("batch_size", max_predict_batch))}[scenario]
    largest = max(1, min(largest, max_predict_batch, int(eff["dataset_samples"])))
    if scenario in ("singlestream", "multistream"):
        return [largest]  # every query has exactly this many samples
    if scenario == "offline":
        # The one query's size is known (accuracy: the whole QSL; performance: LoadGen's
        # expected_qps x min_duration_s x slack), so only full chunks and the remainder occur.
        if eff["mode"] == "accuracy":
            query = int(eff["dataset_samples"])
        else:
            query = int(eff["expected_qps"] * eff["min_duration_ms"] / 1000 * LOADGEN_OFFLINE_SLACK)
        chunk = int(eff.get("batch_size", max_predict_batch))
        sizes = {min(chunk, query, largest)} | ({query % chunk} - {0})
        return sorted(min(size, largest) for size in sizes)
    return sorted({1 << k for k in range(largest.bit_length())} | {largest})
