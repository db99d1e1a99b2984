"""top1_agreement, rules 1.2's fidelity gate of image-resnet50-standard (numpy only; the checker scores with it).

    from levelfield.reference.image_resnet50_standard.common.fidelity import agreement
    value, images = agreement(class_ids, reference, tolerance)   # int [N] responses, the rules' reference file

An image agrees when its predicted class (LoadGen's response: the class id,
metric.NO_CLASS for a row that was not finite, which never agrees) has a
float64 reference logit within `tolerance` of the reference's largest for that
image: the reference's top class, or a class it cannot tell from it at the
run's precision (levelfield/ground/fidelity.py). Fidelity to the reference
computation of the pinned weights, not top-1 accuracy.
"""

from __future__ import annotations

import numpy as np

from levelfield.ground.fidelity import class_agreement, items_of
from levelfield.reference.image_resnet50_standard.common.metric import predicted_classes

NAME = "top1_agreement"


def agreement(outputs: np.ndarray, reference: dict, tolerance: float) -> tuple[float, int]:
    """(share of the N images that agree, N); outputs: class ids int [N] or logits [N, classes]."""
    outputs = np.asarray(outputs)
    classes = predicted_classes(outputs) if outputs.ndim == 2 else outputs.astype(np.int64)
    items = items_of(reference, len(classes))
    return class_agreement(reference, classes[items[:, 0]], len(classes), tolerance)
