"""resnet50-v1.5 as a Flax linen module, in the style of the Flax ImageNet example (models.py, ResNet50).

    from levelfield.reference.image_resnet50_standard.jax.model import ResNet50
    model = ResNet50()                                   # 25,557,032 trainable parameters
    variables = model.init(jax.random.key(0), jnp.zeros((1, 224, 224, 3)))   # {"params", "batch_stats"}
    logits = model.apply(variables, images, train=False)   # float32 [N, 224, 224, 3] (NHWC) -> [N, 1000]

Submodule names are the neutral names of common/model_spec.py (stem/conv,
stage2_block0/proj_bn, head, ...), so weights.py only splits names on dots.
Every conv pads explicitly as torch does: the 7x7 stem (3, 3), the 3x3 convs
(1, 1) ('SAME' at stride 2 on an even input pads (0, 1) and shifts the grid),
the max pool (1, 1) with -inf (flax's max_pool). Batch norm and the dtype
policy are fmnist-resnet's (reference/fmnist_resnet/jax/model.py).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from levelfield.reference.fmnist_resnet.jax.model import batch_norm
from levelfield.reference.image_resnet50_standard.common.model_spec import SPEC, ResNetSpec, has_projection


class Bottleneck(nn.Module):
    """1x1 -> 3x3 (stride) -> 1x1 convs with BN, + shortcut, ReLU: [N, H, W, cin] -> [N, H/s, W/s, 4w]."""

    width: int
    stride: int
    expansion: int
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x, train: bool):
        out = self.width * self.expansion
        conv = lambda features, size, name, stride=1, pad=0: nn.Conv(  # noqa: E731
            features,
            (size, size),
            strides=stride,
            padding=((pad, pad), (pad, pad)),
            use_bias=False,
            dtype=self.dtype,
            name=name,
        )
        shortcut = x
        if has_projection(x.shape[-1], out, self.stride):
            shortcut = conv(out, 1, "proj", self.stride)(x)
            shortcut = batch_norm(train, "proj_bn", self.dtype)(shortcut)
        y = nn.relu(batch_norm(train, "bn1", self.dtype)(conv(self.width, 1, "conv1")(x)))
        y = nn.relu(batch_norm(train, "bn2", self.dtype)(conv(self.width, 3, "conv2", self.stride, 1)(y)))
        y = batch_norm(train, "bn3", self.dtype)(conv(out, 1, "conv3")(y))
        return nn.relu(y + shortcut)


class Stem(nn.Module):
    width: int
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x, train: bool):
        y = nn.Conv(
            self.width, (7, 7), strides=2, padding=((3, 3), (3, 3)), use_bias=False, dtype=self.dtype, name="conv"
        )(x)
        y = nn.relu(batch_norm(train, "bn", self.dtype)(y))
        return nn.max_pool(y, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))


class ResNet50(nn.Module):
    shapes: ResNetSpec = SPEC
    dtype: Any = jnp.float32  # jnp.bfloat16: rules precision bf16

    @nn.compact
    def __call__(self, x, train: bool = False):
        s = self.shapes
        x = Stem(s.stem_width, dtype=self.dtype, name="stem")(x, train)  # [N, 56, 56, 64]
        for name, _, width, stride in s.blocks():  # -> [N, 7, 7, 2048]
            x = Bottleneck(width, stride, s.expansion, dtype=self.dtype, name=name)(x, train)
        x = jnp.mean(x, axis=(1, 2))  # global average pool: [N, 2048]
        x = nn.Dense(s.num_classes, dtype=self.dtype, name="head")(x)  # [N, 1000]
        return jnp.asarray(x, jnp.float32)
