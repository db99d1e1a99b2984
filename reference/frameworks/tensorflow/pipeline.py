"""The TensorFlow input pipeline of image-resnet50-standard: tf.data (map, batch, prefetch, AUTOTUNE).

    pipeline = Pipeline(train_images, train_labels, crop=224, workers=2)   # uint8 NHWC, int64
    for x, y in pipeline.batches(batch_indices, plans):                     # float32 NHWC [B, 224, 224, 3], int32 [B]
        ...

As the TF Model Garden feeds ImageNet: a tf.data.Dataset of samples, `map` of
the per-sample preprocessing (slice the crop, flip it, cast and normalise) with
num_parallel_calls=AUTOTUNE, `batch`, then `prefetch(AUTOTUNE)`, on a private
thread pool of `workers` threads (tf.data's threading option). The samples are
the (row, decision) pairs from common/augment.py that each train_steps call
queues, step by step, into one dataset built once per run
(`from_generator` over a queue, then `unbatch`): building a tf.data pipeline
per call cost 0.4-0.9 s here. Order is kept (a sequential source,
deterministic=True under the parallel map), so the batches are the harness's.
The training set lives in a non-trainable tf.Variable, so the map function
captures a handle and gathers one image per sample, rather than a 0.8 GB
constant. workers=0: the map runs one sample at a time with no prefetch.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from levelfield.reference.image_resnet50_standard.common.augment import INV_STD, MEAN


class Pipeline:
    def __init__(self, images: np.ndarray, labels: np.ndarray, crop: int, workers: int):
        self.crop, self.workers = crop, workers
        with tf.device("CPU:0"):  # the host's pipeline, whatever device trains
            self.images = tf.Variable(images, trainable=False, name="train_images")  # uint8 [N, S, S, 3]
            self.labels = tf.constant(np.asarray(labels, np.int32))
        self.mean, self.inv_std = tf.constant(MEAN), tf.constant(INV_STD)
        self._sample = tf.function(
            self._augment,
            input_signature=[tf.TensorSpec([], tf.int32), tf.TensorSpec([3], tf.int32)],
        )
        self._plans: queue.Queue = queue.Queue()  # one (rows [B], decisions [B, 3]) per step, fed by batches()
        self._batch = None  # the batch size the dataset was built for
        self._iterator = None

    def _augment(self, row: tf.Tensor, decision: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """One sample: float32 [crop, crop, 3], its label."""
        image = tf.gather(self.images, row)  # [S, S, 3] uint8
        out = tf.slice(image, tf.stack([decision[0], decision[1], 0]), [self.crop, self.crop, 3])
        out = tf.cond(decision[2] == 1, lambda: tf.reverse(out, axis=[1]), lambda: out)
        return (tf.cast(out, tf.float32) - self.mean) * self.inv_std, tf.gather(self.labels, row)

    def _steps(self):
        """The dataset's source: the steps batches() queued, in order; a None ends it."""
        while (item := self._plans.get()) is not None:
            yield item

    def _build(self, batch: int) -> None:
        """The dataset, built once per batch size and iterated across train_steps calls: building a tf.data
        pipeline and its iterator costs 0.4-0.9 s on this CPU, far more than a step of a small model."""
        self.close()
        signature = (tf.TensorSpec([batch], tf.int32), tf.TensorSpec([batch, 3], tf.int32))
        ds = tf.data.Dataset.from_generator(self._steps, output_signature=signature).unbatch()  # samples, in order
        if self.workers > 0:
            ds = ds.map(self._sample, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            ds = ds.batch(batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
            options = tf.data.Options()
            options.threading.private_threadpool_size = self.workers
            ds = ds.with_options(options)
        else:
            ds = ds.map(self._sample).batch(batch, drop_remainder=True)
        self._batch, self._iterator = batch, iter(ds)

    def batches(self, batch_indices: np.ndarray, plans: list[np.ndarray]) -> Iterator[tuple[tf.Tensor, tf.Tensor]]:
        """The augmented batches of the steps `batch_indices` [steps, B] under `plans` (one [B, 3] each), in order."""
        batch = batch_indices.shape[1]
        if batch != self._batch:
            self._build(batch)
        for rows, plan in zip(batch_indices, plans, strict=True):
            self._plans.put((np.asarray(rows, np.int32), np.asarray(plan, np.int32)))
        for _ in range(len(batch_indices)):  # exactly this call's steps: the next call's are queued by it
            yield next(self._iterator)

    def close(self) -> None:
        """End the current dataset's source (its generator returns), so no tf.data thread waits on the queue."""
        if self._iterator is not None:
            self._plans.put(None)
            self._iterator = None
            self._plans = queue.Queue()
