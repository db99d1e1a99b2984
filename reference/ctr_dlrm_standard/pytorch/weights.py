"""Neutral weights <-> DLRMStandard's state_dict: ctr-dlrm's mapping (names and layouts alike).

    from levelfield.reference.ctr_dlrm_standard.pytorch.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)

reference/ctr_dlrm/pytorch/weights.py has the table; both functions check the
weights against the model's own spec (model.spec), so they serve any DLRMSpec.
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.pytorch.weights import export_neutral, load_neutral, torch_key  # noqa: F401
