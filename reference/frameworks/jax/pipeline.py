"""The JAX input pipeline of image-resnet50-standard: a documented numpy prefetcher on worker threads.

    pipeline = Pipeline(train_images, train_labels, crop=224, workers=2)   # uint8 NHWC, int64
    for x, y in pipeline.batches(batch_indices, plans):                     # float32 NHWC [B, 224, 224, 3], int32 [B]
        ...

JAX has no input pipeline of its own; the Flax ImageNet example feeds it from
tf.data, which would make the JAX row measure TensorFlow's pipeline. Google's
loader for JAX is grain, considered and not used (issue 23): grain 0.2.x brings
array_record (its file format's C++ reader, which nothing here reads), portpicker
and cloudpickle, and its worker processes pickle every record across process
boundaries, where this pipeline's records are slices of one in-memory array.
So: a thread pool of `workers` threads, each building whole batches in numpy
(common/augment.py `augment`: crop, flip, normalise; numpy releases the GIL in
its copies and arithmetic, so the threads overlap with each other and with
XLA's steps), kept `2 x workers` batches ahead of the training loop, as a
DataLoader's prefetch_factor 2 does. workers=0: each batch is built when the
loop asks for it, with no overlap.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from levelfield.reference.image_resnet50_standard.common.augment import augment


class Pipeline:
    def __init__(self, images: np.ndarray, labels: np.ndarray, crop: int, workers: int):
        self.images, self.labels, self.crop, self.workers = images, np.asarray(labels, np.int32), crop, workers
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="levelfield-input") if workers > 0 else None

    def _build(self, rows: np.ndarray, plan: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return augment(self.images, rows, plan, self.crop), self.labels[rows]

    def batches(self, batch_indices: np.ndarray, plans: list[np.ndarray]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The augmented batches (float32 NHWC, int32 labels) of the steps `batch_indices` under `plans`, in order."""
        steps = list(zip(batch_indices, plans, strict=True))
        if self._pool is None:
            for rows, plan in steps:
                yield self._build(rows, plan)
            return
        ahead, pending = 2 * self.workers, deque()
        for rows, plan in steps:
            pending.append(self._pool.submit(self._build, rows, plan))
            if len(pending) > ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
