"""Data order and learning-rate schedule, computed once in numpy for every framework.

    order = batch_order(seed=7, epoch=0, num_samples=60000, batch_size=256)  # int64 [234, 256]
    lrs = learning_rates(recipe, steps_per_epoch=234, epochs=12)             # float64 [2808]

Frameworks never shuffle or schedule on their own: the same seed gives the
same batches and the same learning rate per step in PyTorch, TensorFlow and JAX.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from levelfield.reference.interface import Recipe


def batch_order(seed: int, epoch: int, num_samples: int, batch_size: int) -> np.ndarray:
    """Row indices of each step of one epoch: a seeded permutation, last partial batch dropped.

    Each (seed, epoch) pair has its own numpy SeedSequence child, so epochs are
    independent and any epoch can be recomputed alone.
    """
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=(int(epoch),))))
    steps = num_samples // batch_size
    if steps == 0:
        raise ValueError(f"batch size {batch_size} is larger than the {num_samples} training samples")
    return rng.permutation(num_samples)[: steps * batch_size].reshape(steps, batch_size).astype(np.int64)


def learning_rates(recipe: Recipe, steps_per_epoch: int, epochs: int) -> np.ndarray:
    """Per-step learning rates: linear warmup over `warmup_epochs`, then the rules' schedule.

    `constant` keeps the peak rate; `cosine` decays from the peak to 0 at the
    end of `epochs` (half a cosine period), as torchvision's references do;
    `linear` decays from the peak to 0 in a straight line, as BERT's reference
    (google-research/bert optimization.py, polynomial decay of power 1).
    """
    total = steps_per_epoch * epochs
    warmup = int(round(recipe.warmup_epochs * steps_per_epoch))
    step = np.arange(total, dtype=np.float64)
    peak = recipe.learning_rate
    kind = recipe.fixed["lr_schedule"]
    if kind == "constant":
        lrs = np.full(total, peak)
    elif kind == "cosine":
        progress = (step - warmup) / max(1, total - warmup)
        lrs = peak * 0.5 * (1.0 + np.cos(math.pi * np.clip(progress, 0.0, 1.0)))
    elif kind == "linear":
        progress = (step - warmup) / max(1, total - warmup)
        lrs = peak * (1.0 - np.clip(progress, 0.0, 1.0))
    else:
        raise ValueError(f"unknown lr_schedule {kind!r}")
    if warmup:
        lrs[:warmup] = peak * (step[:warmup] + 1) / warmup
    return lrs
