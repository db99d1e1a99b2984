"""Dataset arrays -> model inputs and labels for seq-transformer (numpy only).

    from levelfield.reference.datasets import load_dataset
    from levelfield.reference.seq_transformer.common.inputs import model_inputs, labels
    arrays = load_dataset(task)
    inputs = model_inputs(arrays, "train")    # {"tokens": int32 [65536, 12]}
    y = labels(arrays, "train")               # int64 [65536, 12], the sorted digits

`predict_chunks(n)` is the shape policy every framework's compiled predict
uses (the same as the other tasks'): a request of any size is cut into chunks
of at most MAX_PREDICT_BATCH rows, each padded up to the next power of two, so
a compiled predict sees at most log2(MAX_PREDICT_BATCH) + 1 = 11 distinct batch
shapes however LoadGen sizes its queries. Padding rows are token 0; rows never
interact (attention stays within one sequence), so their outputs are dropped.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference import batching
from levelfield.reference.batching import pad_rows  # noqa: F401 - part of this module's interface
from levelfield.reference.datasets import check_split

MAX_PREDICT_BATCH = 1024  # rows per compiled predict call; larger requests are chunked


def model_inputs(arrays: dict[str, np.ndarray], split: str) -> dict[str, np.ndarray]:
    """{"tokens": int32 [N, 12]} from the uint8 `<split>_inputs` array (embedding lookups want int32)."""
    check_split(split)
    return {"tokens": np.ascontiguousarray(arrays[f"{split}_inputs"], dtype=np.int32)}


def labels(arrays: dict[str, np.ndarray], split: str) -> np.ndarray:
    """int64 [N, 12]: the target digit at each position (the input row sorted ascending)."""
    check_split(split)
    return np.ascontiguousarray(arrays[f"{split}_targets"], dtype=np.int64)


def predict_chunks(n: int, max_batch: int = MAX_PREDICT_BATCH) -> list[tuple[int, int, int]]:
    """(start, stop, padded size) of each chunk of a predict request of n rows (reference/batching.py);
    `max_batch`: seq-transformer-standard's chunks are smaller (its logits per row are 15 MiB)."""
    return batching.predict_chunks(n, max_batch)
