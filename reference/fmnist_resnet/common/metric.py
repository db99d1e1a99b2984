"""top1_accuracy for fmnist-resnet, numpy only: the trainer, the runner and the checker all score with this.

    from levelfield.reference.fmnist_resnet.common.metric import score
    score(logits, labels)      # float in [0, 1]: fraction of rows whose argmax is the label

Ties in a row go to the lowest class id (numpy's argmax), identically for every
framework's outputs, since scoring happens here and not in framework code. A
row holding NaN or inf (a diverged model) counts as wrong rather than crashing
the run: numpy's argmax would otherwise pick the NaN's position.
"""

from __future__ import annotations

import numpy as np

NAME = "top1_accuracy"


def score(outputs: np.ndarray, labels: np.ndarray) -> float:
    """mean(argmax(outputs, axis=1) == labels) over N rows; outputs [N, classes], labels [N]."""
    outputs = np.asarray(outputs)
    labels = np.asarray(labels)
    if outputs.ndim != 2 or labels.ndim != 1 or len(outputs) != len(labels):
        raise ValueError(f"expected outputs [N, classes] and labels [N], got {outputs.shape} and {labels.shape}")
    if len(labels) == 0:
        raise ValueError("cannot score zero samples")
    correct = (np.argmax(outputs, axis=1) == labels) & np.all(np.isfinite(outputs), axis=1)
    return float(np.mean(correct))
