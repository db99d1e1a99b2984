"""Progress bars on stderr: training epochs (`EpochProgress`) and LoadGen runs (`LoadGenProgress`).

Training: a bar per epoch on a terminal, one line per evaluation everywhere
(evaluations may fall inside an epoch: the rules' cadence, ground/eval_cadence.py).
The bar advances in chunks of steps, so the framework still runs many steps
per call and the host syncs only once per chunk: the first chunk is 1/20 of
an epoch, later ones as many steps as took about a second before. Fixed
per-call costs (a host sync, building the call's inputs) thus stay near 1% of
training however fast the steps are; with 20 chunks per epoch they made
TensorFlow's ctr-dlrm epoch ~5% slower than one call (benchmarks: trainer).
Chunking never changes the numbers: every framework runs the same compiled
step once per batch, whatever the chunk.

Inference: the runner's main thread calls `LoadGenProgress.update` a few times
a second while LoadGen runs in its worker thread: performance mode shows the
seconds elapsed against the minimum duration, accuracy mode the samples
answered against the QSL size, both with the queries issued and samples
answered so far.

On a non-terminal (CI, a log file) or when disabled, the bars stay silent.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import TextIO

import numpy as np
from tqdm import tqdm

FIRST_CHUNKS_PER_EPOCH = 20  # the first chunk, before any step was timed
CHUNK_TARGET_S = 1.0  # later chunks: about this long, so the bar still moves every second


class EpochProgress:
    """One bar per epoch (use as a context manager: the last bar closes on exit). The trainer feeds each
    epoch's steps through `steps` in segments cut at the evaluations, which may fall inside an epoch."""

    def __init__(self, task: str, framework: str, run_index: int, max_epochs: int, steps_per_epoch: int):
        self.label = f"{task}/{framework} run {run_index}"
        self.max_epochs = max_epochs
        self.steps_per_epoch = steps_per_epoch
        self.chunk = max(1, steps_per_epoch // FIRST_CHUNKS_PER_EPOCH)
        self.chunks: list[int] = []  # every chunk's length, in order (for tests and curiosity)
        self._bar: tqdm | None = None
        self._bar_epoch: int | None = None

    def _epoch_bar(self, epoch: int) -> tqdm:
        if self._bar_epoch != epoch:
            self.close()
            self._bar = tqdm(
                total=self.steps_per_epoch,
                desc=f"{self.label} epoch {epoch}/{self.max_epochs}",
                unit="step",
                leave=False,
                disable=None,
                file=sys.stderr,
            )
            self._bar_epoch = epoch
        return self._bar

    def steps(self, epoch: int, order: np.ndarray, lrs: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield (batch_indices, learning_rates) chunks of some of `epoch`'s steps while its bar advances."""
        bar = self._epoch_bar(epoch)
        start = 0
        while start < len(order):
            size = min(self.chunk, len(order) - start)
            began = time.perf_counter()
            yield order[start : start + size], lrs[start : start + size]  # the caller trains them here
            took_s = time.perf_counter() - began
            self.chunks.append(size)
            self.chunk = max(1, round(size * CHUNK_TARGET_S / max(took_s, 1e-6)))
            bar.update(size)
            start += size

    def evaluated(self, epoch_num: int | float, metric: str, value: float, target: float) -> None:
        """One line per evaluation, printed above the bar (tqdm.write keeps the bar intact)."""
        mark = "reached" if value >= target else "below"
        shown = f"{epoch_num:g}" if isinstance(epoch_num, float) else str(epoch_num)
        tqdm.write(f"{self.label} epoch {shown}: {metric} {value:.4f} ({mark} target {target})", file=sys.stdout)
        sys.stdout.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar, self._bar_epoch = None, None

    def __enter__(self) -> EpochProgress:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False


class LoadGenProgress:
    """A bar for one LoadGen run; use as a context manager and call update() from the waiting thread."""

    def __init__(self, label: str, eff: dict, *, enabled: bool = True, file: TextIO | None = None):
        file = file if file is not None else sys.stderr
        self.accuracy = eff["mode"] == "accuracy"
        # Accuracy mode answers every QSL sample once; performance mode runs at least min_duration.
        total = int(eff["dataset_samples"]) if self.accuracy else max(eff["min_duration_ms"], 1) / 1000
        fmt = "{desc}: {percentage:3.0f}%|{bar}| {postfix}"
        disabled = not enabled or not (hasattr(file, "isatty") and file.isatty())
        self.bar = tqdm(
            total=total, desc=label, leave=False, file=file, disable=disabled, bar_format=fmt, mininterval=0
        )

    def update(self, elapsed_s: float, queries: int, samples: int) -> None:
        if self.bar.disable:
            return
        if self.accuracy:
            self.bar.n = min(samples, self.bar.total)
            text = f"{samples}/{self.bar.total} samples, {queries} queries, {elapsed_s:.1f} s"
        else:
            self.bar.n = min(elapsed_s, self.bar.total)
            text = f"{elapsed_s:.1f}/{self.bar.total:.1f} s min duration, {queries} queries, {samples} samples"
        self.bar.set_postfix_str(text, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
