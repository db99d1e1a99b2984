"""Dataset arrays -> model inputs and labels for ctr-dlrm, numpy only.

    from levelfield.reference.datasets import load_dataset
    from levelfield.reference.ctr_dlrm.common.inputs import model_inputs, labels
    arrays = load_dataset(task)
    inputs = model_inputs(arrays, "eval")   # {"dense": float32 [32768, 13], "sparse": int32 [32768, 8]}
    y = labels(arrays, "eval")              # float32 [32768], 0.0 or 1.0

The generator already scales dense features to [0, 1), so no preprocessing
happens here beyond dtypes; labels become float32 because every framework's
sigmoid cross-entropy takes float targets.

`predict_chunks(n)` is the shape policy every framework's compiled predict uses:
a request of any size is cut into chunks of at most MAX_PREDICT_BATCH rows,
each padded up to the next power of two, so a compiled predict sees at most
log2(MAX_PREDICT_BATCH) + 1 = 13 distinct batch shapes however LoadGen sizes
its queries. Padded rows are zeros (category id 0 exists in every table) and
their outputs are discarded.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference import batching
from levelfield.reference.batching import pad_rows  # noqa: F401 - part of this module's interface
from levelfield.reference.datasets import check_split

# Rows per compiled predict call. 4096 keeps the offline scenario (24,576+ samples
# per query) at a few calls while one chunk stays ~0.3 MB of inputs.
MAX_PREDICT_BATCH = 4096


def model_inputs(arrays: dict[str, np.ndarray], split: str) -> dict[str, np.ndarray]:
    """{"dense": float32 [N, 13], "sparse": int32 [N, 8]} (C-contiguous)."""
    check_split(split)
    return {
        "dense": np.ascontiguousarray(arrays[f"{split}_dense"], dtype=np.float32),
        "sparse": np.ascontiguousarray(arrays[f"{split}_sparse"], dtype=np.int32),
    }


def labels(arrays: dict[str, np.ndarray], split: str) -> np.ndarray:
    """Click labels as float32 [N] (0.0 / 1.0)."""
    check_split(split)
    return arrays[f"{split}_labels"].astype(np.float32)


def predict_chunks(n: int) -> list[tuple[int, int, int]]:
    """(start, stop, padded size) of each chunk of a predict request of n rows (reference/batching.py)."""
    return batching.predict_chunks(n, MAX_PREDICT_BATCH)


def check_inputs(inputs: dict[str, np.ndarray]) -> int:
    """Number of rows N of a model-input dict; a clear error when names, ranks or row counts disagree."""
    if set(inputs) != {"dense", "sparse"}:
        raise ValueError(f"expected inputs 'dense' and 'sparse', got {sorted(inputs)}")
    dense, sparse = inputs["dense"], inputs["sparse"]
    if dense.ndim != 2 or sparse.ndim != 2 or len(dense) != len(sparse):
        raise ValueError(f"expected dense [N, F] and sparse [N, C], got {dense.shape} and {sparse.shape}")
    return len(dense)
