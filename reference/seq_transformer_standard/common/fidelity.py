"""masked_token_agreement, rules 1.2's fidelity gate of seq-transformer-standard (numpy only; the checker uses it).

    from levelfield.reference.seq_transformer_standard.common.fidelity import agreement
    value, positions = agreement(token_ids, reference, tolerance)   # int [N, 128] responses, the reference file

Only the masked positions count (the reference lists them: input token 0 of
the first N eval sequences): elsewhere a model's task is copying its input,
which says little. A masked position agrees when the predicted token has a
float64 reference logit within `tolerance` of the reference's largest there
(levelfield/ground/fidelity.py). Fidelity to the reference computation of the
pinned weights, not token accuracy.
"""

from __future__ import annotations

import numpy as np

from levelfield.ground.fidelity import class_agreement, items_of
from levelfield.reference.seq_transformer_standard.common.metric import predicted_tokens

NAME = "masked_token_agreement"


def agreement(outputs: np.ndarray, reference: dict, tolerance: float) -> tuple[float, int]:
    """(share of the masked positions of the N sequences that agree, their number); outputs: token ids int
    [N, seq_len] or logits [N, seq_len, classes]."""
    tokens = predicted_tokens(outputs).astype(np.int64)
    items = items_of(reference, len(tokens))
    return class_agreement(reference, tokens[items[:, 0], items[:, 1]], len(tokens), tolerance)
