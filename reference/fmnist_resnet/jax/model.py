"""resnet-small as a Flax linen module, in the style of the Flax ImageNet example (models.py).

    from levelfield.reference.fmnist_resnet.jax.model import ResNetSmall
    model = ResNetSmall()
    variables = model.init(jax.random.key(0), jnp.zeros((1, 28, 28, 1)))   # {"params", "batch_stats"}
    logits = model.apply(variables, images, train=False)   # images float32 [N, 28, 28, 1] (NHWC) -> [N, 10]
    logits, updates = model.apply(variables, images, train=True, mutable=["batch_stats"])

Submodule names follow the neutral names of common/model_spec.py (stem/conv,
block2/proj_bn, head, ...), so weights.py only splits names on dots.
Every 3x3 conv pads ((1, 1), (1, 1)) explicitly: 'SAME' at stride 2 on an even
input pads (0, 1), torch's padding=1 pads (1, 1).
"""

from __future__ import annotations

from functools import partial

import jax.numpy as jnp
from flax import linen as nn

from levelfield.reference.fmnist_resnet.common import model_spec as spec

PAD_1 = ((1, 1), (1, 1))


def batch_norm(train: bool, name: str) -> nn.BatchNorm:
    # Flax momentum is the decay of the running statistic (torch: 1 - momentum). use_fast_variance=False:
    # two-pass mean((x - mean)^2) as torch and tf.nn.moments, not E[x^2] - E[x]^2.
    return nn.BatchNorm(
        use_running_average=not train,
        momentum=spec.BN_DECAY,
        epsilon=spec.BN_EPSILON,
        use_fast_variance=False,
        name=name,
    )


conv3x3 = partial(nn.Conv, kernel_size=(3, 3), padding=PAD_1, use_bias=False)


class BasicBlock(nn.Module):
    """conv3x3(stride)-BN-ReLU-conv3x3-BN + shortcut, ReLU. [N, H, W, cin] -> [N, H/stride, W/stride, cout]."""

    features: int
    stride: int

    @nn.compact
    def __call__(self, x, train: bool):
        shortcut = x
        if spec.block_has_projection(x.shape[-1], self.features, self.stride):
            shortcut = nn.Conv(
                self.features, (1, 1), strides=self.stride, padding="VALID", use_bias=False, name="proj"
            )(x)
            shortcut = batch_norm(train, "proj_bn")(shortcut)
        y = conv3x3(self.features, strides=self.stride, name="conv1")(x)
        y = nn.relu(batch_norm(train, "bn1")(y))
        y = conv3x3(self.features, name="conv2")(y)
        y = batch_norm(train, "bn2")(y)
        return nn.relu(y + shortcut)


class Stem(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool):
        return nn.relu(batch_norm(train, "bn")(conv3x3(spec.STEM_CHANNELS, name="conv")(x)))


class ResNetSmall(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool = False):
        x = Stem(name="stem")(x, train)  # [N, 28, 28, 16]
        for name, features, stride in spec.BLOCKS:  # -> [N, 7, 7, 64]
            x = BasicBlock(features, stride, name=name)(x, train)
        x = jnp.mean(x, axis=(1, 2))  # global average pool: [N, 64]
        return nn.Dense(spec.NUM_CLASSES, name="head")(x)  # [N, 10]
