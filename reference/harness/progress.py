"""Progress for training: a bar per epoch on a terminal, one line per evaluation everywhere.

The bar advances in chunks of steps (about 20 per epoch), so the framework
still runs many steps per call and the host syncs only once per chunk. On a
non-terminal (CI, a log file) tqdm stays silent and only the eval lines print.
"""

from __future__ import annotations

import sys

import numpy as np
from tqdm import tqdm

CHUNKS_PER_EPOCH = 20


class EpochProgress:
    def __init__(self, task: str, framework: str, run_index: int, max_epochs: int, steps_per_epoch: int):
        self.label = f"{task}/{framework} run {run_index}"
        self.max_epochs = max_epochs
        self.chunk = max(1, steps_per_epoch // CHUNKS_PER_EPOCH)

    def epoch(self, epoch: int, order: np.ndarray, lrs: np.ndarray):
        """Yield (batch_indices, learning_rates) chunks of one epoch while a bar advances."""
        with tqdm(total=len(order), desc=f"{self.label} epoch {epoch}/{self.max_epochs}", unit="step",
                  leave=False, disable=None, file=sys.stderr) as bar:
            for start in range(0, len(order), self.chunk):
                yield order[start:start + self.chunk], lrs[start:start + self.chunk]
                bar.update(min(self.chunk, len(order) - start))

    def evaluated(self, epoch: int, metric: str, value: float, target: float) -> None:
        mark = "reached" if value >= target else "below"
        print(f"{self.label} epoch {epoch}: {metric} {value:.4f} ({mark} target {target})", flush=True)
