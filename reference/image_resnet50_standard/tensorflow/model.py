"""resnet50-v1.5 as a Keras 3 model (TensorFlow backend), in the style of keras.applications' ResNet50 (v1.5 stride).

    from levelfield.reference.image_resnet50_standard.tensorflow.model import ResNet50
    model = ResNet50()                         # 25,557,032 trainable parameters
    logits = model(images, training=False)     # float32 [N, 224, 224, 3] (NHWC) -> [N, 1000]
    model = ResNet50(SPEC.resized(...))        # the equivalence tests' reduced network

Padding as torch's, explicitly: ZeroPadding2D(3) before the 7x7 stride-2 stem
conv, fmnist-resnet's conv3x3 (ZeroPadding2D(1) + 'valid' at stride 2), and a pad of -inf (as torch's
and Flax's max pools pad) before the 3x3 stride-2 max pool. Zeros would give the
same forward values (the pool's input is a ReLU's, >= 0) but not the same
gradient: where a window's maximum is a tie at 0 (dead ReLUs), TensorFlow's
max-pool gradient goes to the first tied position, which would be a padding
zero, and the gradient would be lost instead of reaching a real pixel. Batch norm,
the dtype policy and the float32 logits are fmnist-resnet's
(reference/fmnist_resnet/tensorflow/model.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from keras import layers, ops

from levelfield.reference.fmnist_resnet.tensorflow.model import batch_norm, conv3x3
from levelfield.reference.frameworks.tensorflow.keras_backend import keras  # first: selects Keras' tensorflow backend
from levelfield.reference.image_resnet50_standard.common.model_spec import SPEC, ResNetSpec, has_projection

if TYPE_CHECKING:
    import tensorflow as tf


class Bottleneck(layers.Layer):
    """1x1 -> 3x3 (stride) -> 1x1 convs with BN, + shortcut, ReLU: [N, H, W, cin] -> [N, H/s, W/s, 4w]."""

    def __init__(self, in_channels: int, width: int, stride: int, expansion: int, **kwargs: Any):
        super().__init__(**kwargs)
        dtype = self.dtype_policy
        out = width * expansion
        self.conv1 = layers.Conv2D(width, 1, use_bias=False, name="conv1", dtype=dtype)
        self.bn1 = batch_norm("bn1", dtype)
        *self.pad2, self.conv2 = conv3x3(width, stride, "conv2", dtype)
        self.bn2 = batch_norm("bn2", dtype)
        self.conv3 = layers.Conv2D(out, 1, use_bias=False, name="conv3", dtype=dtype)
        self.bn3 = batch_norm("bn3", dtype)
        self.proj = None  # identity shortcut unless the shape changes
        if has_projection(in_channels, out, stride):
            self.proj = layers.Conv2D(out, 1, strides=stride, use_bias=False, name="proj", dtype=dtype)
            self.proj_bn = batch_norm("proj_bn", dtype)

    def call(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        shortcut = x if self.proj is None else self.proj_bn(self.proj(x), training=training)
        out = ops.relu(self.bn1(self.conv1(x), training=training))
        for pad in self.pad2:
            out = pad(out)
        out = ops.relu(self.bn2(self.conv2(out), training=training))
        out = self.bn3(self.conv3(out), training=training)
        return ops.relu(out + shortcut)


class ResNet50(keras.Model):
    def __init__(self, spec: ResNetSpec = SPEC, dtype_policy: str = "float32", **kwargs: Any):
        """`dtype_policy`: "float32" (fp32), "mixed_bfloat16" (bf16) or "mixed_float16" (fp16)."""
        super().__init__(name="resnet50", dtype=dtype_policy, **kwargs)
        dtype = self.dtype_policy
        self.spec = spec
        self.stem_pad = layers.ZeroPadding2D(3, dtype=dtype)
        self.conv = layers.Conv2D(spec.stem_width, 7, strides=2, use_bias=False, name="stem_conv", dtype=dtype)
        self.bn = batch_norm("stem_bn", dtype)
        self.maxpool = layers.MaxPooling2D(3, strides=2, dtype=dtype)
        self.blocks = {
            name: Bottleneck(cin, width, stride, spec.expansion, name=name, dtype=dtype)
            for name, cin, width, stride in spec.blocks()
        }
        self.pool = layers.GlobalAveragePooling2D(dtype=dtype)
        self.head = layers.Dense(spec.num_classes, name="head", dtype=dtype)
        self.logits = layers.Activation("linear", dtype="float32", name="logits")  # float32 out, for the loss
        # One inference call on a dummy image creates every variable (the values come from load()).
        self(ops.zeros((1, spec.image_size, spec.image_size, 3)), training=False)

    def call(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        x = ops.relu(self.bn(self.conv(self.stem_pad(x)), training=training))  # [N, 112, 112, 64]
        x = ops.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=float("-inf"))  # the pool's padding
        x = self.maxpool(x)  # [N, 56, 56, 64]
        for block in self.blocks.values():  # -> [N, 7, 7, 2048]
            x = block(x, training=training)
        return self.logits(self.head(self.pool(x)))  # [N, 1000], float32
