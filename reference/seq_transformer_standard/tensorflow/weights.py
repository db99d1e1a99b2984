"""Neutral weights <-> the Keras model's variables: seq-transformer's mapping (names, head reshapes).

    from levelfield.reference.seq_transformer_standard.tensorflow.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)

reference/seq_transformer/tensorflow/weights.py has the table; both functions check
the weights against the model's own spec (model.spec).
"""

from __future__ import annotations

from levelfield.reference.seq_transformer.tensorflow.weights import export_neutral, keras_path, load_neutral  # noqa: F401
