"""Neutral weights <-> the Flax params tree: seq-transformer's mapping (names, head reshapes).

    from levelfield.reference.seq_transformer_standard.jax.weights import to_params, from_params
    params = to_params(init_weights(0), shapes=SPEC)
    neutral = from_params(params, SPEC)

reference/seq_transformer/jax/weights.py has the table.
"""

from __future__ import annotations

from levelfield.reference.seq_transformer.jax.weights import flax_path, from_params, to_params  # noqa: F401
