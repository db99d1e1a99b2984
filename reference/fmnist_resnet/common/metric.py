"""top1_accuracy for fmnist-resnet, numpy only: the trainer, the runner and the checker all score with this.

    from levelfield.reference.fmnist_resnet.common.metric import score, predicted_classes
    score(logits, labels)                      # float in [0, 1]: fraction of rows whose argmax is the label
    score(predicted_classes(logits), labels)   # the same value from class ids (LoadGen's responses)

Ties in a row go to the lowest class id (numpy's argmax), identically for every
framework's outputs, since scoring happens here and not in framework code. A
row holding NaN or inf (a diverged model) counts as wrong rather than crashing
the run: numpy's argmax would otherwise pick the NaN's position. Its class id
is NO_CLASS, which no label equals, so scoring class ids gives exactly the
value scoring the logits gives.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

NAME = "top1_accuracy"
NO_CLASS = -1  # predicted class of a row that is not all finite: never equals a label


def predicted_classes(logits: np.ndarray, dtype: type[np.integer] = np.int8) -> np.ndarray:
    """int8 [N] class ids from logits [N, classes]: argmax, NO_CLASS where a row is not all finite; `dtype`: another
    task's id width (image-resnet50-standard's int16), the same rule."""
    logits = np.asarray(logits)
    if logits.ndim != 2:
        raise ValueError(f"expected logits [N, classes], got {logits.shape}")
    classes = np.argmax(logits, axis=1).astype(dtype)
    classes[~np.all(np.isfinite(logits), axis=1)] = NO_CLASS
    return classes


def score(
    outputs: np.ndarray, labels: np.ndarray, to_classes: Callable[[np.ndarray], np.ndarray] = predicted_classes
) -> float:
    """mean(predicted class == label) over N rows.

    outputs: logits [N, classes] (float), or class ids [N] (integer, as
    predicted_classes returns them); labels [N]. `to_classes`: logits -> class ids
    (another task's id width; the same rule).
    """
    outputs = np.asarray(outputs)
    labels = np.asarray(labels)
    if outputs.ndim == 1 and np.issubdtype(outputs.dtype, np.integer):
        predicted = outputs
    elif outputs.ndim == 2:
        predicted = to_classes(outputs)
    else:
        raise ValueError(
            f"expected outputs [N, classes] (logits) or [N] (integer class ids), got {outputs.dtype} {outputs.shape}"
        )
    if labels.ndim != 1 or len(predicted) != len(labels):
        raise ValueError(f"expected outputs [N, ...] and labels [N], got {outputs.shape} and {labels.shape}")
    if len(labels) == 0:
        raise ValueError("cannot score zero samples")
    return float(np.mean(predicted == labels))
