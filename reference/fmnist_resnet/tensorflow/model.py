"""resnet-small as a Keras 3 model (TensorFlow backend); it trains with TorchSGD
(reference/frameworks/tensorflow/optimizers.py).

    from levelfield.reference.fmnist_resnet.tensorflow.model import ResNetSmall
    model = ResNetSmall()
    logits = model(images, training=False)     # images float32 [N, 28, 28, 1] (NHWC) -> [N, 10]
    model = ResNetSmall("mixed_bfloat16")      # rules 1.1 precision bf16: Keras' mixed-precision policy

Stride-2 3x3 convs pad explicitly with ZeroPadding2D(1) and use 'valid': Keras'
'same' would pad (0, 1) on an even input at stride 2, torch's padding=1 pads
(1, 1), and the two sample different pixels. Stride-1 3x3 convs use 'same',
which is (1, 1) there.

Mixed precision is Keras' dtype policy, given to every layer ("mixed_bfloat16"
or "mixed_float16": variables float32, computation bfloat16 or float16; fp16's
loss scaling is the optimizer's, implementation.py; the guide's per-layer
form rather than the global `keras.mixed_precision.set_global_policy`, so two
models of different precision can live in one process, as the tests build
them). BatchNormalization computes its statistics in float32 under any policy
(Keras upcasts its input), and the logits leave through a float32 linear
Activation, as the guide asks of a model's output, so the loss is float32.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from keras import layers, ops

from levelfield.reference.fmnist_resnet.common import model_spec as spec
from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend

if TYPE_CHECKING:  # annotations only: the model is written in Keras ops; its tensors are TensorFlow's
    import tensorflow as tf


def batch_norm(name: str, dtype: Any) -> layers.BatchNormalization:
    # Keras momentum is the decay of the running statistic (torch: 1 - momentum).
    return layers.BatchNormalization(momentum=spec.BN_DECAY, epsilon=spec.BN_EPSILON, name=name, dtype=dtype)


def conv3x3(filters: int, stride: int, name: str, dtype: Any) -> list[layers.Layer]:
    """3x3 conv, no bias, symmetric 1-pixel padding at any stride; `dtype`: the layers' dtype policy."""
    if stride == 1:
        return [layers.Conv2D(filters, 3, padding="same", use_bias=False, name=name, dtype=dtype)]
    return [
        layers.ZeroPadding2D(1, name=f"{name}_pad", dtype=dtype),
        layers.Conv2D(filters, 3, strides=stride, padding="valid", use_bias=False, name=name, dtype=dtype),
    ]


class BasicBlock(layers.Layer):
    """conv3x3(stride)-BN-ReLU-conv3x3-BN + shortcut, ReLU. [N, H, W, cin] -> [N, H/stride, W/stride, cout]."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, **kwargs: Any):
        super().__init__(**kwargs)
        dtype = self.dtype_policy  # the block's sublayers share its policy
        *self.pad1, self.conv1 = conv3x3(out_channels, stride, "conv1", dtype)
        self.bn1 = batch_norm("bn1", dtype)
        (self.conv2,) = conv3x3(out_channels, 1, "conv2", dtype)
        self.bn2 = batch_norm("bn2", dtype)
        self.proj = None  # identity shortcut unless the shape changes
        if spec.block_has_projection(in_channels, out_channels, stride):
            self.proj = layers.Conv2D(out_channels, 1, strides=stride, use_bias=False, name="proj", dtype=dtype)
            self.proj_bn = batch_norm("proj_bn", dtype)

    def call(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        shortcut = x if self.proj is None else self.proj_bn(self.proj(x), training=training)
        out = x
        for pad in self.pad1:
            out = pad(out)
        out = ops.relu(self.bn1(self.conv1(out), training=training))
        out = self.bn2(self.conv2(out), training=training)
        return ops.relu(out + shortcut)


class ResNetSmall(keras.Model):
    def __init__(self, dtype_policy: str = "float32", **kwargs: Any):
        """`dtype_policy`: "float32" (rules precision fp32), "mixed_bfloat16" (bf16) or "mixed_float16" (fp16)."""
        super().__init__(name="resnet_small", dtype=dtype_policy, **kwargs)
        dtype = self.dtype_policy
        (self.conv,) = conv3x3(spec.STEM_CHANNELS, 1, "stem_conv", dtype)
        self.bn = batch_norm("stem_bn", dtype)
        channels, blocks = spec.STEM_CHANNELS, {}
        for name, out_channels, stride in spec.BLOCKS:
            blocks[name] = BasicBlock(channels, out_channels, stride, name=name, dtype=dtype)
            channels = out_channels
        self.blocks = blocks
        self.pool = layers.GlobalAveragePooling2D(dtype=dtype)
        self.head = layers.Dense(spec.NUM_CLASSES, name="head", dtype=dtype)
        self.logits = layers.Activation("linear", dtype="float32", name="logits")  # float32 out, for the loss
        # One inference call on a dummy image creates every variable (the values come from load()).
        self(ops.zeros((1, spec.IMAGE_SIZE, spec.IMAGE_SIZE, spec.IN_CHANNELS)), training=False)

    def call(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        x = ops.relu(self.bn(self.conv(x), training=training))  # [N, 28, 28, 16]
        for block in self.blocks.values():  # -> [N, 7, 7, 64]
            x = block(x, training=training)
        return self.logits(self.head(self.pool(x)))  # [N, 10], float32
