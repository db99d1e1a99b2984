"""Dataset arrays -> model inputs and labels for seq-transformer-standard: seq-transformer's, smaller chunks.

    inputs = model_inputs(arrays, "eval")   # {"tokens": int32 [8192, 128]}, masked positions token 0
    y = labels(arrays, "eval")              # int64 [8192, 128], the unmasked tokens

As seq-transformer's (reference/seq_transformer/common/inputs.py), but predict
requests are cut into chunks of at most MAX_PREDICT_BATCH = 32 rows: a row's
logits are 128 x 30,522 float32 (15 MiB), so a chunk's are 0.5 GiB before the
implementation takes their argmax.
"""

from __future__ import annotations

from levelfield.reference import batching
from levelfield.reference.seq_transformer.common.inputs import labels, model_inputs, pad_rows  # noqa: F401

MAX_PREDICT_BATCH = 32  # rows per compiled predict call


def predict_chunks(n: int) -> list[tuple[int, int, int]]:
    """(start, stop, padded size) of each chunk of a predict request of n rows (reference/batching.py)."""
    return batching.predict_chunks(n, MAX_PREDICT_BATCH)
