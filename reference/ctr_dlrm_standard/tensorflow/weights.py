"""Neutral weights <-> the Keras model's variables: ctr-dlrm's mapping (names only, no layout change).

    from levelfield.reference.ctr_dlrm_standard.tensorflow.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)

reference/ctr_dlrm/tensorflow/weights.py has the table; both functions check
the weights against the model's own spec (model.spec).
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.tensorflow.weights import export_neutral, load_neutral, variable_for  # noqa: F401
