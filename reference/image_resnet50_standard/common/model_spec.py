"""resnet50-v1.5 for image-resnet50-standard: MLPerf Training's ResNet-50, built from this task's rules.

    from levelfield.reference.image_resnet50_standard.common.model_spec import SPEC, init_weights
    SPEC.parameter_shapes["stage1_block0.conv2.kernel"]   # (3, 3, 64, 64)
    SPEC.trainable_count()                                 # 25,557,032
    small = SPEC.resized(image_size=32, stem_width=8, stage_blocks=(1, 1, 1, 1), stage_widths=(4, 8, 8, 8))

ResNet-50 v1.5 (He et al. 2015, "Deep Residual Learning", table 1, 50-layer
column; v1.5 as torchvision's resnet50 and MLPerf Training's reference: the
stride of a stage's first block sits on its 3x3 conv, not its first 1x1). At the
sizes of this task's rules (`model.architecture`), NHWC shapes at 224:

    stem    conv7x7 3->64 stride 2 pad 3, BN, ReLU          -> [N, 112, 112, 64]
            maxpool 3x3 stride 2 pad 1                       -> [N, 56, 56, 64]
    stage1  3 bottlenecks, width 64,  out 256, stride 1      -> [N, 56, 56, 256]
    stage2  4 bottlenecks, width 128, out 512, stride 2      -> [N, 28, 28, 512]
    stage3  6 bottlenecks, width 256, out 1024, stride 2     -> [N, 14, 14, 1024]
    stage4  3 bottlenecks, width 512, out 2048, stride 2     -> [N, 7, 7, 2048]
    head    global average pool, dense 2048 -> 1000 + bias  -> [N, 1000] logits

Bottleneck (width w, out = expansion x w): conv1x1 -> w, BN, ReLU; conv3x3 w -> w
(the block's stride, pad 1), BN, ReLU; conv1x1 w -> out, BN; plus the shortcut
(identity, or conv1x1 with the stride + BN in each stage's first block), add,
ReLU. The max pool pads with -inf in every framework (the stem's ReLU outputs
tie at 0, and a zero pad would take the gradient of such ties in TensorFlow).

Neutral names and layouts (conv kernels HWIO, dense [in, out]; BN `mean` / `var`
are running statistics, not trainable), as fmnist-resnet's:

    stem.conv.kernel [7, 7, 3, 64], stem.bn.{scale,bias,mean,var} [64]
    stage{s}_block{b}.conv{1,2,3}.kernel, .bn{1,2,3}.{...}, .proj.kernel, .proj_bn.{...} (b = 0 only)
    head.kernel [2048, 1000], head.bias [1000]

Initial values: fmnist-resnet's rule (He-normal fan_out convs, BN 1 / 0, torch
Linear's uniform head), drawn in parameter_shapes order.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from levelfield.reference.fmnist_resnet.common.model_spec import (  # noqa: F401 - BN_DECAY, BN_EPSILON: the models'
    BN_BUFFERS,
    BN_DECAY,
    BN_EPSILON,
    resnet_init_weights,
)
from levelfield.reference.image_resnet50_standard.common.metric import predicted_classes
from levelfield.rules.loader import Task, newest_task

TASK_ID = "image-resnet50-standard"
IN_CHANNELS = 3


@dataclass(frozen=True)
class ResNetSpec:
    """A bottleneck ResNet's sizes; every framework's model and weight mapping is built from one."""

    image_size: int  # the square input's side, pixels (the crop)
    stem_width: int
    stage_blocks: tuple[int, ...]
    stage_widths: tuple[int, ...]
    expansion: int
    num_classes: int

    def __post_init__(self):
        if len(self.stage_blocks) != len(self.stage_widths):
            raise ValueError(f"stage_blocks {self.stage_blocks} and stage_widths {self.stage_widths} differ in length")

    @classmethod
    def from_task(cls, task: Task) -> ResNetSpec:
        arch = task.model["architecture"]
        return cls(
            image_size=arch["image_size"],
            stem_width=arch["stem_width"],
            stage_blocks=tuple(arch["stage_blocks"]),
            stage_widths=tuple(arch["stage_widths"]),
            expansion=arch["expansion"],
            num_classes=task.dataset["num_classes"],
        )

    def resized(self, **sizes: object) -> ResNetSpec:
        """The same network at other sizes (the equivalence tests' reduced model)."""
        return dataclasses.replace(self, **sizes)

    def blocks(self) -> list[tuple[str, int, int, int]]:
        """(name, input channels, width, stride) of every bottleneck in order."""
        out, cin = [], self.stem_width
        for s, (count, width) in enumerate(zip(self.stage_blocks, self.stage_widths, strict=True)):
            for b in range(count):
                stride = 2 if s > 0 and b == 0 else 1
                out.append((f"stage{s + 1}_block{b}", cin, width, stride))
                cin = width * self.expansion
        return out

    @property
    def features(self) -> int:
        """Channels into the head."""
        return self.stage_widths[-1] * self.expansion

    @functools.cached_property  # a frozen dataclass's __dict__ still takes it; fields decide equality
    def parameter_shapes(self) -> dict[str, tuple[int, ...]]:
        shapes = {"stem.conv.kernel": (7, 7, IN_CHANNELS, self.stem_width), **_bn("stem.bn", self.stem_width)}
        for name, cin, width, stride in self.blocks():
            out = width * self.expansion
            shapes[f"{name}.conv1.kernel"] = (1, 1, cin, width)
            shapes.update(_bn(f"{name}.bn1", width))
            shapes[f"{name}.conv2.kernel"] = (3, 3, width, width)
            shapes.update(_bn(f"{name}.bn2", width))
            shapes[f"{name}.conv3.kernel"] = (1, 1, width, out)
            shapes.update(_bn(f"{name}.bn3", out))
            if has_projection(cin, out, stride):
                shapes[f"{name}.proj.kernel"] = (1, 1, cin, out)
                shapes.update(_bn(f"{name}.proj_bn", out))
        shapes["head.kernel"] = (self.features, self.num_classes)
        shapes["head.bias"] = (self.num_classes,)
        return shapes

    @property
    def trainable(self) -> tuple[str, ...]:
        return tuple(n for n in self.parameter_shapes if n.rsplit(".", 1)[1] not in BN_BUFFERS)

    def trainable_count(self) -> int:
        """Trainable scalars, from the shapes alone (the rules' model.parameters)."""
        shapes = self.parameter_shapes
        return sum(math.prod(shapes[n]) for n in self.trainable)

    def init_weights(self, seed: int) -> dict[str, np.ndarray]:
        """Initial neutral weights, float32, drawn in parameter_shapes order from PCG64(seed) (fmnist-resnet's rule)."""
        return resnet_init_weights(self.parameter_shapes, seed)


def _bn(prefix: str, channels: int) -> dict[str, tuple[int, ...]]:
    return {f"{prefix}.{part}": (channels,) for part in ("scale", "bias", "mean", "var")}


def has_projection(in_channels: int, out_channels: int, stride: int) -> bool:
    return stride != 1 or in_channels != out_channels


# The fixed recipe every framework's code implements (Implementation.implements).
IMPLEMENTS = {"optimizer": "sgd", "loss": "softmax_cross_entropy", "label_smoothing": 0.1}

SPEC = ResNetSpec.from_task(newest_task(TASK_ID))
# The model_spec names every task has (the harness and the tests read them here), its SPEC's own.
PARAMETER_SHAPES: dict[str, tuple[int, ...]] = SPEC.parameter_shapes
TRAINABLE: tuple[str, ...] = SPEC.trainable
trainable_count = SPEC.trainable_count
init_weights = SPEC.init_weights  # at this task's sizes: 25.6 M float32 values, 98 MiB


# predict's output per row: float32 logits over the 1000 classes.
OUTPUT_SHAPE: tuple[int, ...] = (SPEC.num_classes,)

# -- LoadGen responses: the predicted class id, int16 (1000 classes do not fit int8), as MLPerf's ResNet answers.
RESPONSE_DTYPE = np.dtype("i2")
RESPONSE_SHAPE: tuple[int, ...] = ()


def to_response(outputs: np.ndarray) -> np.ndarray:
    """Response rows int16 [N] (predicted class ids, metric.NO_CLASS for a non-finite row) from logits [N, 1000]."""
    return predicted_classes(outputs)
