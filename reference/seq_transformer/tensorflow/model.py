"""encoder-small in Keras (TensorFlow backend): embeddings, 2 pre-norm encoder layers, per-position head.

    model = build_model()            # built: every variable exists
    logits = model(tokens)           # int32 [B, 12] -> float32 [B, 12, 10]

Keras has no encoder-layer class in core, so `EncoderLayer` is the usual
small custom layer around keras.layers.MultiHeadAttention (4 heads, key_dim
16, kernels [64, 4, 16], output kernel [4, 16, 64], scale 1/sqrt(16)),
LayerNormalization(epsilon=1e-5; Keras' default is 1e-3) and two Dense
layers with the exact erf GELU (approximate=False, stated although it is the
Keras default). Sizes come from common/model_spec.py; weights are set from the
neutral init by weights.py, so Keras' initialisers never matter.

Mixed precision (bf16: seq-transformer-standard's inference, rules 1.2) is
Keras' dtype policy given to every layer ("mixed_bfloat16": float32
variables, bfloat16 computation; the per-layer form, as fmnist-resnet's model),
the logits leaving through a float32 linear Activation as the guide asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from keras import layers, ops

from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend
from levelfield.reference.seq_transformer.common import model_spec as spec

if TYPE_CHECKING:  # annotations only: the model is written in Keras ops; its tensors are TensorFlow's
    import tensorflow as tf


def gelu_exact(x: tf.Tensor) -> tf.Tensor:
    return keras.activations.gelu(x, approximate=False)


class EncoderLayer(layers.Layer):
    """x = x + MHA(LN(x)); x = x + FF(LN(x)) on [B, 12, 64]; no mask, no dropout."""

    def __init__(self, shapes: spec.TransformerSpec = spec.SPEC, **kwargs: Any):
        super().__init__(**kwargs)
        dtype = self.dtype_policy  # the sublayers share the layer's policy
        self.attention_norm = layers.LayerNormalization(epsilon=spec.LN_EPS, name="attention_norm", dtype=dtype)
        self.attention = layers.MultiHeadAttention(
            num_heads=shapes.num_heads,
            key_dim=shapes.head_dim,
            dropout=0.0,
            use_bias=True,
            name="attention",
            dtype=dtype,
        )
        self.mlp_norm = layers.LayerNormalization(epsilon=spec.LN_EPS, name="mlp_norm", dtype=dtype)
        self.dense1 = layers.Dense(shapes.ff_dim, activation=gelu_exact, name="dense1", dtype=dtype)
        self.dense2 = layers.Dense(shapes.d_model, name="dense2", dtype=dtype)

    def call(self, x: tf.Tensor) -> tf.Tensor:
        h = self.attention_norm(x)
        x = x + self.attention(h, h)  # self-attention: query = value = key
        return x + self.dense2(self.dense1(self.mlp_norm(x)))


class EncoderSmall(keras.Model):
    def __init__(self, shapes: spec.TransformerSpec = spec.SPEC, dtype_policy: str = "float32", **kwargs: Any):
        """`dtype_policy`: "float32" (precision fp32) or "mixed_bfloat16" (bf16)."""
        super().__init__(dtype=dtype_policy, **kwargs)
        dtype = self.dtype_policy
        self.spec = shapes  # the sizes (seq-transformer-standard passes its own)
        self.token_embedding = layers.Embedding(shapes.vocab_size, shapes.d_model, name="token_embedding", dtype=dtype)
        self.position_embedding = layers.Embedding(
            shapes.seq_len, shapes.d_model, name="position_embedding", dtype=dtype
        )
        self.encoder_layers = [EncoderLayer(shapes, name=f"layer{i}", dtype=dtype) for i in range(shapes.num_layers)]
        self.final_norm = layers.LayerNormalization(epsilon=spec.LN_EPS, name="final_norm", dtype=dtype)
        self.head = layers.Dense(shapes.num_classes, name="head", dtype=dtype)
        self.logits = layers.Activation("linear", dtype="float32", name="logits")  # float32 out, for the loss

    def call(self, tokens: tf.Tensor) -> tf.Tensor:
        positions = ops.arange(self.spec.seq_len)  # [12]
        x = self.token_embedding(tokens) + self.position_embedding(positions)[None]  # [B, 12, 64]
        for layer in self.encoder_layers:
            x = layer(x)
        return self.logits(self.head(self.final_norm(x)))  # [B, 12, 10]


def build_model(shapes: spec.TransformerSpec = spec.SPEC, dtype_policy: str = "float32") -> EncoderSmall:
    model = EncoderSmall(shapes, dtype_policy, name="encoder_small")
    model(ops.zeros((1, shapes.seq_len), dtype="int32"))  # creates every variable
    return model
