"""top1_accuracy for image-resnet50-standard, numpy only: fmnist-resnet's metric with int16 class ids.

    from levelfield.reference.image_resnet50_standard.common.metric import score, predicted_classes
    score(logits, labels)                      # float in [0, 1]: fraction of rows whose argmax is the label
    score(predicted_classes(logits), labels)   # the same value from class ids (LoadGen's responses)

As reference/fmnist_resnet/common/metric.py (ties to the lowest id; a row that
is not all finite counts as wrong, class NO_CLASS), but the ids are int16: 1000
classes do not fit fmnist-resnet's int8.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.fmnist_resnet.common import metric as fmnist_metric

NAME = "top1_accuracy"


def predicted_classes(logits: np.ndarray) -> np.ndarray:
    """int16 [N] class ids from logits [N, classes]: fmnist-resnet's rule, at int16."""
    return fmnist_metric.predicted_classes(logits, np.int16)


def score(outputs: np.ndarray, labels: np.ndarray) -> float:
    """mean(predicted class == label) over N rows; outputs: logits [N, classes] or integer class ids [N]."""
    return fmnist_metric.score(outputs, labels, to_classes=predicted_classes)
