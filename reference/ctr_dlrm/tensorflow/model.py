"""dlrm-small as a Keras 3 model (architecture: ctr_dlrm/common/model_spec.py).

    model = build_model()                                 # ctr-dlrm's shapes; build_model(spec) for another
    logits = model({"dense": dense, "sparse": sparse})   # float32 [B, 13], int32 [B, 8] -> float32 [B]

Keras layer names are the neutral prefixes with dots replaced by underscores
(`bottom.dense0` -> `bottom_dense0`), so tensorflow/weights.py maps them by name.

Mixed precision (bf16: ctr-dlrm-standard's inference, rules 1.2) is Keras' dtype
policy given to every layer ("mixed_bfloat16": float32 variables and tables,
bfloat16 computation and lookups), the logit cast to float32 at the end.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from levelfield.reference.ctr_dlrm.common import model_spec as spec
from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend


def layer_name(neutral_prefix: str) -> str:
    return neutral_prefix.replace(".", "_")


class DLRMSmall(keras.Model):
    def __init__(self, shapes: spec.DLRMSpec = spec.SPEC, dtype_policy: str = "float32", **kwargs: Any):
        """`dtype_policy`: "float32" (precision fp32) or "mixed_bfloat16" (bf16)."""
        super().__init__(dtype=dtype_policy, **kwargs)
        dtype = self.dtype_policy
        self.spec = shapes
        self.embeddings = [
            keras.layers.Embedding(rows, shapes.embedding_dim, name=f"embedding{f}", dtype=dtype)
            for f, rows in enumerate(shapes.cardinalities)
        ]
        # ReLU after every bottom layer; after every top layer but the last (the logit).
        self.bottom_mlp = [
            keras.layers.Dense(fan_out, activation="relu", name=layer_name(name), dtype=dtype)
            for name, _, fan_out in shapes.bottom_layers
        ]
        self.top_mlp = [
            keras.layers.Dense(
                fan_out,
                activation="relu" if i < len(shapes.top_layers) - 1 else None,
                name=layer_name(name),
                dtype=dtype,
            )
            for i, (name, _, fan_out) in enumerate(shapes.top_layers)
        ]
        self.pair_index = tf.constant(shapes.interaction_flat_index)  # [36] into Z [B, 81]

    def call(self, inputs: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        x = inputs["dense"]  # [B, 13]
        for layer in self.bottom_mlp:
            x = layer(x)  # -> [B, 16]
        sparse = inputs["sparse"]  # [B, 8]
        vectors = [x] + [table(sparse[:, f]) for f, table in enumerate(self.embeddings)]
        t = tf.stack(vectors, axis=1)  # [B, 9, 16]
        z = tf.linalg.matmul(t, t, transpose_b=True)  # [B, 9, 9]
        dots = tf.gather(tf.reshape(z, [-1, self.spec.num_vectors**2]), self.pair_index, axis=1)  # [B, 36]
        y = tf.concat([x, dots], axis=1)  # [B, 52]
        for layer in self.top_mlp:
            y = layer(y)
        return tf.cast(tf.squeeze(y, axis=1), tf.float32)  # [B], float32 under any policy (the loss's input)


def build_model(shapes: spec.DLRMSpec = spec.SPEC, dtype_policy: str = "float32") -> DLRMSmall:
    """The model with its variables created (by one call on a 1-row dummy batch)."""
    model = DLRMSmall(shapes, dtype_policy, name="dlrm_small")
    model({"dense": tf.zeros([1, shapes.dense_features]), "sparse": tf.zeros([1, shapes.num_fields], tf.int32)})
    return model
