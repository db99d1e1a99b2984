"""Neutral weights <-> EncoderStandard's state_dict: seq-transformer's mapping (names and layouts alike).

    from levelfield.reference.seq_transformer_standard.pytorch.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)

reference/seq_transformer/pytorch/weights.py has the table; both functions check
the weights against the model's own spec (model.spec), so they serve any TransformerSpec.
"""

from __future__ import annotations

from levelfield.reference.seq_transformer.pytorch.weights import export_neutral, load_neutral, torch_location  # noqa: F401
