"""The quality metric of seq-transformer: exact match of whole sorted sequences (numpy only).

    from levelfield.reference.seq_transformer.common.metric import score, predicted_tokens
    accuracy = score(logits, labels)    # logits float [N, 12, 10], labels int [N, 12] -> float in [0, 1]
    score(predicted_tokens(logits), labels)   # the same value from digits (LoadGen's responses)

A sequence counts only if all 12 predicted digits equal the targets: sorting
is right or wrong as a whole. The checker re-scores submissions with this same
function, so it imports no framework.
"""

from __future__ import annotations

import numpy as np

NAME = "exact_match"


def predicted_tokens(logits: np.ndarray) -> np.ndarray:
    """int8 [N, 12] digits from logits [N, 12, 10]: argmax over the last axis (ties: the lowest digit).

    int16 where more than 128 classes would not fit int8 (seq-transformer-standard's 30,522 tokens).
    """
    logits = np.asarray(logits)
    if logits.ndim != 3:
        raise ValueError(f"{NAME}: expected logits [N, seq_len, classes], got {logits.shape}")
    return np.argmax(logits, axis=-1).astype(np.int8 if logits.shape[-1] <= 128 else np.int16)


def score(outputs: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of rows whose predictions equal `labels` at every position.

    outputs: logits [N, 12, 10] (argmax over the last axis; ties take the
    lowest class, numpy's rule), or predicted tokens [N, 12] (integers).
    labels: integer [N, 12].
    """
    outputs, labels = np.asarray(outputs), np.asarray(labels)
    if labels.ndim != 2 or labels.shape[0] == 0:
        raise ValueError(f"{NAME}: labels must be [N, seq_len] with N >= 1, got shape {labels.shape}")
    if outputs.ndim == labels.ndim + 1:
        predicted = predicted_tokens(outputs)
    elif outputs.ndim == labels.ndim and np.issubdtype(outputs.dtype, np.integer):
        predicted = outputs
    else:
        raise ValueError(
            f"{NAME}: outputs must be logits [N, seq_len, classes] or integer tokens "
            f"[N, seq_len], got {outputs.dtype} {outputs.shape}"
        )
    if predicted.shape != labels.shape:
        raise ValueError(f"{NAME}: predictions {predicted.shape} do not match labels {labels.shape}")
    return float(np.mean(np.all(predicted == labels, axis=1)))
