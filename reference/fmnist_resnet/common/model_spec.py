"""resnet-small for fmnist-resnet: architecture constants, neutral weight names and shapes, initial weights.

    from levelfield.reference.fmnist_resnet.common.model_spec import init_weights, PARAMETER_SHAPES, TRAINABLE
    weights = init_weights(seed=0)          # {"stem.conv.kernel": float32 [3, 3, 1, 16], ...}

Every framework builds the network from the constants below and loads the
same `init_weights(seed)`, so all three start from identical numbers.

Network (input [N, 28, 28, 1] in [0, 1]; shapes below are NHWC):

    stem    conv3x3 1->16 (no bias), BN, ReLU                       -> [N, 28, 28, 16]
    block1  basic block 16->16, stride 1, identity shortcut         -> [N, 28, 28, 16]
    block2  basic block 16->32, stride 2, 1x1 projection + BN       -> [N, 14, 14, 32]
    block3  basic block 32->64, stride 2, 1x1 projection + BN       -> [N,  7,  7, 64]
    head    global average pool, dense 64->10 with bias             -> [N, 10] logits

Basic block: conv3x3(stride)-BN-ReLU-conv3x3-BN, plus the shortcut, add, ReLU.
Every 3x3 conv pads 1 pixel on each side (also at stride 2: 28 -> 14 -> 7), as
torch's padding=1 does; 'SAME' padding would pad (0, 1) at stride 2 and shift
the sampling grid. The 1x1 projection pads nothing.

Neutral names and layouts (conv kernels HWIO, dense kernel [in, out]):

    stem.conv.kernel                 [3, 3, 1, 16]
    stem.bn.{scale,bias,mean,var}    [16]
    blockK.conv1.kernel              [3, 3, in, out]
    blockK.bn1.{scale,bias,mean,var} [out]
    blockK.conv2.kernel              [3, 3, out, out]
    blockK.bn2.{scale,bias,mean,var} [out]
    blockK.proj.kernel               [1, 1, in, out]   (blocks 2 and 3 only)
    blockK.proj_bn.{...}             [out]             (blocks 2 and 3 only)
    head.kernel                      [64, 10]
    head.bias                        [10]

`mean` / `var` are batch-norm running statistics: weights in the file, not
trainable parameters (not in TRAINABLE, no gradient, no weight decay).
"""

from __future__ import annotations

import math

import numpy as np

from levelfield.reference.fmnist_resnet.common.metric import predicted_classes

IMAGE_SIZE = 28  # pixels, square
IN_CHANNELS = 1
STEM_CHANNELS = 16
# (name, output channels, stride of the first conv); a projection where stride != 1 or channels change.
BLOCKS = (("block1", 16, 1), ("block2", 32, 2), ("block3", 64, 2))
NUM_CLASSES = 10

BN_EPSILON = 1e-5
# running = BN_DECAY * running + (1 - BN_DECAY) * batch statistic
# (torch momentum=0.1, Flax / Keras momentum=0.9).
BN_DECAY = 0.9
BN_BUFFERS = ("mean", "var")


def block_has_projection(in_channels: int, out_channels: int, stride: int) -> bool:
    return stride != 1 or in_channels != out_channels


def _bn_shapes(prefix: str, channels: int) -> dict[str, tuple]:
    return {f"{prefix}.{part}": (channels,) for part in ("scale", "bias", "mean", "var")}


def _parameter_shapes() -> dict[str, tuple]:
    shapes = {"stem.conv.kernel": (3, 3, IN_CHANNELS, STEM_CHANNELS), **_bn_shapes("stem.bn", STEM_CHANNELS)}
    cin = STEM_CHANNELS
    for name, cout, stride in BLOCKS:
        shapes[f"{name}.conv1.kernel"] = (3, 3, cin, cout)
        shapes.update(_bn_shapes(f"{name}.bn1", cout))
        shapes[f"{name}.conv2.kernel"] = (3, 3, cout, cout)
        shapes.update(_bn_shapes(f"{name}.bn2", cout))
        if block_has_projection(cin, cout, stride):
            shapes[f"{name}.proj.kernel"] = (1, 1, cin, cout)
            shapes.update(_bn_shapes(f"{name}.proj_bn", cout))
        cin = cout
    shapes["head.kernel"] = (cin, NUM_CLASSES)
    shapes["head.bias"] = (NUM_CLASSES,)
    return shapes


PARAMETER_SHAPES: dict[str, tuple] = _parameter_shapes()
TRAINABLE: tuple[str, ...] = tuple(n for n in PARAMETER_SHAPES if n.rsplit(".", 1)[1] not in BN_BUFFERS)


def trainable_count() -> int:
    """Number of trainable scalars (the rules' model.parameters: 77,754)."""
    return sum(math.prod(PARAMETER_SHAPES[n]) for n in TRAINABLE)


def init_weights(seed: int) -> dict[str, np.ndarray]:
    """Initial neutral weights, float32, drawn in PARAMETER_SHAPES order from PCG64(seed) (resnet_init_weights)."""
    return resnet_init_weights(PARAMETER_SHAPES, seed)


def resnet_init_weights(parameter_shapes: dict[str, tuple], seed: int) -> dict[str, np.ndarray]:
    """Initial neutral weights of a ResNet's names, float32, drawn in `parameter_shapes` order from PCG64(seed);
    image-resnet50-standard's ResNet-50 takes the same rule.

    Conv kernels: He-normal, fan_out mode (std = sqrt(2 / (kh * kw * out))), as
    torchvision's ResNet. BN: scale 1, bias 0, running mean 0, running var 1.
    Dense: kernel and bias uniform(-1/sqrt(in), 1/sqrt(in)), torch.nn.Linear's default.
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    bound = 1.0 / math.sqrt(parameter_shapes["head.kernel"][0])
    weights = {}
    for name, shape in parameter_shapes.items():
        part = name.rsplit(".", 1)[1]
        if name == "head.kernel" or name == "head.bias":
            value = rng.uniform(-bound, bound, size=shape)
        elif part == "kernel":
            kh, kw, _, cout = shape
            value = rng.normal(0.0, math.sqrt(2.0 / (kh * kw * cout)), size=shape)
        elif part in ("scale", "var"):
            value = np.ones(shape)
        else:  # BN bias, running mean
            value = np.zeros(shape)
        weights[name] = value.astype(np.float32)
    return weights


# predict's output per row (logits float32), e.g. what the harness-only model `none` returns.
OUTPUT_SHAPE: tuple[int, ...] = (NUM_CLASSES,)


# -- LoadGen responses ------------------------------------------------------------------
# What the runner answers each LoadGen sample with, and so what mlperf_log_accuracy.json
# holds: the least the metric needs, as MLPerf's ResNet answers with the predicted class.
# Here one int8 class id per sample (metric.NO_CLASS for a row that is not all finite),
# 1 byte instead of 10 float32 logits; the accuracy scorer reads rows of this dtype and shape.
RESPONSE_DTYPE = np.dtype("i1")
RESPONSE_SHAPE: tuple[int, ...] = ()


def to_response(outputs: np.ndarray) -> np.ndarray:
    """Response rows int8 [N] (predicted class ids) from predict's logits float32 [N, 10]."""
    return predicted_classes(outputs)
