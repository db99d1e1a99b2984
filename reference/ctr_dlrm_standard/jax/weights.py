"""Neutral weights <-> the Flax params tree: ctr-dlrm's mapping (names only, no layout change).

    from levelfield.reference.ctr_dlrm_standard.jax.weights import to_params, to_neutral
    params = to_params(init_weights(0), shapes=SPEC)
    neutral = to_neutral(params, SPEC)

reference/ctr_dlrm/jax/weights.py has the table.
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.jax.weights import params_path, to_neutral, to_params  # noqa: F401
