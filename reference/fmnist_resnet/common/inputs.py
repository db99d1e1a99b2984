"""Dataset arrays -> model inputs and labels for fmnist-resnet, numpy only.

    from levelfield.reference.datasets import load_dataset
    from levelfield.reference.fmnist_resnet.common.inputs import model_inputs, labels
    arrays = load_dataset(task)
    inputs = model_inputs(arrays, "eval")     # {"images": float32 [10000, 28, 28] in [0, 1]}
    y = labels(arrays, "eval")                # int64 [10000]

Each framework reshapes "images" to its own layout (torch NCHW, TF / JAX NHWC)
after receiving it; the pixel scaling happens here, once, for all of them.

`predict_chunks(n)` is the shape policy every framework's compiled predict uses:
a request of any size is cut into chunks of at most MAX_PREDICT_BATCH rows,
each padded up to the next power of two, so a compiled predict sees at most
log2(MAX_PREDICT_BATCH) + 1 = 11 distinct batch shapes however LoadGen sizes
its queries.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference import batching
from levelfield.reference.batching import pad_rows  # noqa: F401 - part of this module's interface
from levelfield.reference.datasets import check_split

MAX_PREDICT_BATCH = 1024  # rows per compiled predict call; larger requests are chunked


def model_inputs(arrays: dict[str, np.ndarray], split: str) -> dict[str, np.ndarray]:
    """{"images": float32 [N, 28, 28]}: uint8 pixels / 255, computed in float32."""
    check_split(split)
    pixels = arrays[f"{split}_images"]
    return {"images": pixels.astype(np.float32) / np.float32(255.0)}


def labels(arrays: dict[str, np.ndarray], split: str) -> np.ndarray:
    """Class ids 0..9 as int64 [N]."""
    check_split(split)
    return arrays[f"{split}_labels"].astype(np.int64)


def predict_chunks(n: int) -> list[tuple[int, int, int]]:
    """(start, stop, padded size) of each chunk of a predict request of n rows (reference/batching.py)."""
    return batching.predict_chunks(n, MAX_PREDICT_BATCH)
