"""score_agreement, rules 1.2's fidelity gate of ctr-dlrm-standard (numpy only; the checker scores with it).

    from levelfield.reference.ctr_dlrm_standard.common.fidelity import agreement
    value, rows = agreement(logits, reference, tolerance)   # float32 [N] responses, the rules' reference file

A row agrees when its click probability sigmoid(logit) (LoadGen's response is
the logit) lies within `tolerance` of the float64 reference's probability for
that row; a NaN or infinite logit never agrees (levelfield/ground/fidelity.py).
Fidelity to the reference computation of the pinned weights, not ROC AUC.
"""

from __future__ import annotations

import numpy as np

from levelfield.ground.fidelity import score_agreement

NAME = "score_agreement"


def agreement(outputs: np.ndarray, reference: dict, tolerance: float) -> tuple[float, int]:
    """(share of the N rows that agree, N); outputs: logits [N] or [N, 1]."""
    outputs = np.asarray(outputs)
    return score_agreement(reference, outputs.reshape(len(outputs)), tolerance)
