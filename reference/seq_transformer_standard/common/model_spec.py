"""encoder-bert-base for seq-transformer-standard: BERT-base's encoder sizes, built from this task's rules.

    from levelfield.reference.seq_transformer_standard.common.model_spec import SPEC, init_weights
    SPEC.parameter_shapes["layer0.mlp.dense1.kernel"]   # (768, 3072)
    weights = init_weights(seed=0)                      # 132,066,618 float32 values: 0.49 GiB

The network is seq-transformer's pre-norm encoder (reference/seq_transformer/
common/model_spec.py: token + learned position embedding, pre-norm layers,
final LayerNorm, per-position dense head), at the sizes this task's rules give
in `model.architecture` and the vocabulary and length of `dataset.params`:

    tokens int32 [B, 128] -> token embedding [30522, 768] + position embedding [128, 768]
    12 x pre-norm encoder layer: 12 heads x 64, feed-forward 768 -> 3072 -> 768 (exact GELU)
    final LN -> per-position dense 768 -> 30522     logits [B, 128, 30522]; predict answers their argmax

Neutral names and layouts are seq-transformer's.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.seq_transformer.common.model_spec import TransformerSpec
from levelfield.reference.seq_transformer_standard.common.metric import predicted_tokens
from levelfield.rules.loader import newest_task

TASK_ID = "seq-transformer-standard"

SPEC = TransformerSpec.from_task(newest_task(TASK_ID))
# The model_spec names every task has (the harness and the tests read them here), its SPEC's own.
PARAMETER_SHAPES: dict[str, tuple[int, ...]] = SPEC.parameter_shapes
TRAINABLE: tuple[str, ...] = SPEC.trainable
trainable_count = SPEC.trainable_count
init_weights = SPEC.init_weights  # as seq-transformer's; 0.49 GiB at full size


# predict's output per row: the argmax token id at each position (int32; logits would be 15 MiB a row).
OUTPUT_SHAPE: tuple[int, ...] = (SPEC.seq_len,)

# -- LoadGen responses: the predicted token at each of the 128 positions, int16 (30,522 ids fit).
RESPONSE_DTYPE = np.dtype("i2")
RESPONSE_SHAPE: tuple[int, ...] = (SPEC.seq_len,)


def to_response(outputs: np.ndarray) -> np.ndarray:
    """Response rows int16 [N, 128] from predict's token ids int32 [N, 128] (or logits)."""
    return predicted_tokens(outputs)
