"""The training augmentation of image-resnet50-standard: decisions drawn in numpy, the same for every framework.

    from levelfield.reference.image_resnet50_standard.common.augment import decisions, augment, normalise
    plan = decisions(step=0, rows=batch_rows, stored=256, crop=224)   # int32 [B, 3]: top, left, flip
    x = augment(train_images, batch_rows, plan, crop=224)             # float32 [B, 224, 224, 3], the reference

ImageNet-style, as MLPerf's ResNet and torchvision's references train: a random
224x224 crop of the 256x256 stored image (MLPerf's reference crops a random
area and aspect ratio and resizes; a fixed-size crop needs no resampling, so
the three frameworks' pipelines can agree bit for bit), a horizontal flip with
probability 1/2, then uint8 -> float32 normalised with ImageNet's channel mean
and standard deviation. Evaluation uses the centre crop (inputs.py).

Who decides what. The crop offsets and flip bits of every sample are drawn here,
in numpy, by a counter-based hash of (step, row): `step` counts the optimizer
steps an implementation has taken since its last `load()` (the trainer's warm-up
step is undone by a load, so the timed run starts at step 0), `row` is the
sample's index in the training set. A sample meets each epoch at another step,
so it is cropped and flipped anew every epoch; the batch order already depends
on the run's seed (reference/schedule.py), and so do the decisions. Each
framework's pipeline (DataLoader, tf.data, the JAX prefetcher) only applies
them, so the three produce bit-identical float batches (tests/test_image_standard.py),
and the harness's interface (`train_steps(batch_indices, learning_rates)`) is
unchanged. No framework random op is used: their generators differ.

Normalisation is `(float32(pixel) - MEAN) * INV_STD` with float32 constants in
every framework: one correctly rounded subtraction and one multiplication (no
fused multiply-add is possible in that order), so it is bit-identical too.
"""

from __future__ import annotations

import numpy as np

# ImageNet's channel statistics in pixel units (torchvision: mean 0.485, 0.456, 0.406 and std 0.229, 0.224,
# 0.225 of 255), as MLPerf's ResNet reference normalises.
MEAN = np.array([123.675, 116.28, 103.53], np.float32)
INV_STD = (1.0 / np.array([58.395, 57.12, 57.375], np.float64)).astype(np.float32)

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (Steele et al. 2014) on uint64: a bijection that mixes every input bit into every
    output bit; integer arithmetic only (wrapping multiplication), so bit-identical everywhere."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def decisions(step: int, rows: np.ndarray, stored: int, crop: int) -> np.ndarray:
    """int32 [B, 3]: (top, left, flip) of each row of one step's batch; top, left in [0, stored - crop], flip 0/1."""
    rows = np.asarray(rows, np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):  # the hash multiplies modulo 2^64 on purpose
        h = _splitmix64((np.uint64(step) << np.uint64(32)) ^ rows)
    span = np.uint64(stored - crop + 1)
    top = h % span
    left = (h >> np.uint64(21)) % span
    flip = (h >> np.uint64(63)) & np.uint64(1)
    return np.stack([top, left, flip], axis=1).astype(np.int32)


def step_plans(first_step: int, batch_indices: np.ndarray, stored: int, crop: int) -> list[np.ndarray]:
    """decisions() of each step's rows of batch_indices [S, B], the steps counted on from `first_step` (an
    implementation's steps since its last load): one int32 [B, 3] plan per step, what every framework's
    pipeline cuts."""
    return [decisions(first_step + k, rows, stored, crop) for k, rows in enumerate(batch_indices)]


def normalise(pixels: np.ndarray) -> np.ndarray:
    """float32 from uint8 [..., 3]: (pixel - MEAN) * INV_STD."""
    return (pixels.astype(np.float32) - MEAN) * INV_STD


def crop_flip(image: np.ndarray, decision: np.ndarray, crop: int) -> np.ndarray:
    """One uint8 [stored, stored, 3] image's crop [crop, crop, 3], mirrored left-right when flip is 1 (a view)."""
    top, left, flip = (int(v) for v in decision)
    out = image[top : top + crop, left : left + crop]
    return out[:, ::-1] if flip else out


def augment(images: np.ndarray, rows: np.ndarray, plan: np.ndarray, crop: int) -> np.ndarray:
    """The reference batch float32 [B, crop, crop, 3] (NHWC) of training `rows` under `plan` (decisions())."""
    return normalise(np.stack([crop_flip(images[r], d, crop) for r, d in zip(rows, plan, strict=True)]))


WORKERS_ENV = "LEVELFIELD_INPUT_WORKERS"


def input_workers() -> int:
    """How many workers (processes or threads) each framework's input pipeline gets: a system setting, not a
    hyperparameter. $LEVELFIELD_INPUT_WORKERS when set (0: in the training process itself, no prefetch),
    else half the CPUs this process may run on, at least 1 and at most 8: the framework's own compute
    threads use every one of them too, and the pipeline's work per sample (a crop, a flip, a normalisation)
    is light beside a ResNet-50 step. Under `levelfield train --nproc N` each rank is pinned to its share
    of the host's CPUs before this is asked (levelfield/cli/launch/worker.py), so each rank's own pipeline
    gets half of its share. The trainer logs the count (levelfield_input_workers)."""
    import os

    from levelfield.ground.errors import UserError

    value = os.environ.get(WORKERS_ENV, "")
    if value:
        if not value.isdigit() or int(value) > 64:
            raise UserError(f"${WORKERS_ENV}: found {value!r}, expected a whole number of workers from 0 to 64")
        return int(value)
    return max(1, min(8, len(os.sched_getaffinity(0)) // 2))
