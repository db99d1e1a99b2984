"""The quality metric of seq-transformer-standard: token accuracy over every position (numpy only).

    from levelfield.reference.seq_transformer_standard.common.metric import score
    accuracy = score(tokens, labels)    # predicted ids int [N, 128], labels int [N, 128] -> float in [0, 1]

predict answers the argmax token ids (logits at BERT's vocabulary do not fit in
memory for an eval set), so `score` takes ids; logits [N, 128, classes] are
accepted too (argmax over the last axis). Every position counts, masked or not:
the labels carry no mask, and the model is trained on every position (mean
cross-entropy over all B x 128, seq-transformer's loss), so about 85% of the
positions are a copy of the input. The learning shows in the other 15%; a
masked-only metric would need the mask in the labels and a masked loss in all
three frameworks (README, "Objective").
"""

from __future__ import annotations

import numpy as np

NAME = "token_accuracy"


def predicted_tokens(outputs: np.ndarray) -> np.ndarray:
    """int16 [N, 128] token ids from ids (integers, or whole-number floats) or from logits [N, 128, classes]."""
    outputs = np.asarray(outputs)
    if outputs.ndim == 3:
        return np.argmax(outputs, axis=-1).astype(np.int16)
    if outputs.ndim == 2 and np.issubdtype(outputs.dtype, np.integer):
        return outputs.astype(np.int16)
    # Whole-number floats are ids too: the harness-only model `none` answers float32 zeros [N, 128].
    if outputs.ndim == 2 and np.issubdtype(outputs.dtype, np.floating) and np.all(outputs == np.floor(outputs)):
        return outputs.astype(np.int16)
    raise ValueError(
        f"{NAME}: outputs must be token ids int [N, seq_len] or logits [N, seq_len, classes], "
        f"got {outputs.dtype} {outputs.shape}"
    )


def score(outputs: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of all N x 128 positions whose predicted token equals the label."""
    labels = np.asarray(labels)
    if labels.ndim != 2 or labels.shape[0] == 0:
        raise ValueError(f"{NAME}: labels must be [N, seq_len] with N >= 1, got shape {labels.shape}")
    predicted = predicted_tokens(outputs)
    if predicted.shape != labels.shape:
        raise ValueError(f"{NAME}: predictions {predicted.shape} do not match labels {labels.shape}")
    return float(np.mean(predicted == labels))
