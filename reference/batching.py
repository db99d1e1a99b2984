"""The predict shape policy every task and framework shares (numpy only).

    for start, stop, size in predict_chunks(n, max_batch=1024):
        padded = pad_rows(inputs[start:stop], size)    # run the compiled predict on `size` rows
        outputs.append(predict(padded)[: stop - start])

A request of any size is cut into chunks of at most `max_batch` rows, each
padded up to the next power of two, so a compiled predict sees at most
log2(max_batch) + 1 distinct batch shapes however LoadGen sizes its queries.
Padded rows are zeros and their outputs are discarded; the models never mix
rows, so padding cannot change a real row's output.
"""

from __future__ import annotations

import numpy as np


def bucket_size(n: int, max_batch: int) -> int:
    """The padded batch size for a chunk of n rows (1 <= n <= max_batch): the next power of two."""
    if not 1 <= n <= max_batch:
        raise ValueError(f"chunk of {n} rows, expected 1..{max_batch}")
    return 1 << (n - 1).bit_length()


def predict_chunks(n: int, max_batch: int) -> list[tuple[int, int, int]]:
    """(start, stop, padded size) of each chunk of a request of n >= 1 rows."""
    if n < 1:
        raise ValueError(f"predict needs at least one row, got {n}")
    return [
        (start, min(start + max_batch, n), bucket_size(min(max_batch, n - start), max_batch))
        for start in range(0, n, max_batch)
    ]


def pad_rows(array: np.ndarray, size: int) -> np.ndarray:
    """`array` with zero rows appended up to `size` rows."""
    if len(array) == size:
        return array
    return np.concatenate([array, np.zeros((size - len(array),) + array.shape[1:], array.dtype)])
