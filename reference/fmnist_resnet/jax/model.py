"""resnet-small as a Flax linen module, in the style of the Flax ImageNet example (models.py).

    from levelfield.reference.fmnist_resnet.jax.model import ResNetSmall
    model = ResNetSmall()
    variables = model.init(jax.random.key(0), jnp.zeros((1, 28, 28, 1)))   # {"params", "batch_stats"}
    logits = model.apply(variables, images, train=False)   # images float32 [N, 28, 28, 1] (NHWC) -> [N, 10]
    logits, updates = model.apply(variables, images, train=True, mutable=["batch_stats"])
    model = ResNetSmall(dtype=jnp.bfloat16)    # rules 1.1 precision bf16: bfloat16 compute, float32 params

Submodule names follow the neutral names of common/model_spec.py (stem/conv,
block2/proj_bn, head, ...), so weights.py only splits names on dots.
Every 3x3 conv pads ((1, 1), (1, 1)) explicitly: 'SAME' at stride 2 on an even
input pads (0, 1), torch's padding=1 pads (1, 1).

Mixed precision is Flax's dtype policy, as in the Flax ImageNet example's
`half_precision`: every layer gets `dtype` (the computation's) while
`param_dtype` stays float32, so parameters and the optimizer state are float32
and each layer casts them for its computation. Flax's BatchNorm reduces in
float32 whatever its dtype (force_float32_reductions), and the logits are cast
to float32 so the loss is float32.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax.numpy as jnp
from flax import linen as nn

from levelfield.reference.fmnist_resnet.common import model_spec as spec

PAD_1 = ((1, 1), (1, 1))


def batch_norm(train: bool, name: str, dtype: Any) -> nn.BatchNorm:
    # Flax momentum is the decay of the running statistic (torch: 1 - momentum). use_fast_variance=False:
    # two-pass mean((x - mean)^2) as torch and tf.nn.moments, not E[x^2] - E[x]^2.
    return nn.BatchNorm(
        use_running_average=not train,
        momentum=spec.BN_DECAY,
        epsilon=spec.BN_EPSILON,
        use_fast_variance=False,
        dtype=dtype,
        name=name,
    )


conv3x3 = partial(nn.Conv, kernel_size=(3, 3), padding=PAD_1, use_bias=False)


class BasicBlock(nn.Module):
    """conv3x3(stride)-BN-ReLU-conv3x3-BN + shortcut, ReLU. [N, H, W, cin] -> [N, H/stride, W/stride, cout]."""

    features: int
    stride: int
    dtype: Any = jnp.float32  # the computation's; parameters are float32 (param_dtype's default)

    @nn.compact
    def __call__(self, x, train: bool):
        shortcut = x
        if spec.block_has_projection(x.shape[-1], self.features, self.stride):
            shortcut = nn.Conv(
                self.features,
                (1, 1),
                strides=self.stride,
                padding="VALID",
                use_bias=False,
                dtype=self.dtype,
                name="proj",
            )(x)
            shortcut = batch_norm(train, "proj_bn", self.dtype)(shortcut)
        y = conv3x3(self.features, strides=self.stride, dtype=self.dtype, name="conv1")(x)
        y = nn.relu(batch_norm(train, "bn1", self.dtype)(y))
        y = conv3x3(self.features, dtype=self.dtype, name="conv2")(y)
        y = batch_norm(train, "bn2", self.dtype)(y)
        return nn.relu(y + shortcut)


class Stem(nn.Module):
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x, train: bool):
        y = conv3x3(spec.STEM_CHANNELS, dtype=self.dtype, name="conv")(x)
        return nn.relu(batch_norm(train, "bn", self.dtype)(y))


class ResNetSmall(nn.Module):
    dtype: Any = jnp.float32  # jnp.bfloat16: rules precision bf16

    @nn.compact
    def __call__(self, x, train: bool = False):
        x = Stem(dtype=self.dtype, name="stem")(x, train)  # [N, 28, 28, 16]
        for name, features, stride in spec.BLOCKS:  # -> [N, 7, 7, 64]
            x = BasicBlock(features, stride, dtype=self.dtype, name=name)(x, train)
        x = jnp.mean(x, axis=(1, 2))  # global average pool: [N, 64]
        x = nn.Dense(spec.NUM_CLASSES, dtype=self.dtype, name="head")(x)  # [N, 10]
        return jnp.asarray(x, jnp.float32)  # float32 logits: the loss and softmax stay float32
