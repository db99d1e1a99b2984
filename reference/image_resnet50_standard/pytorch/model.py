"""resnet50-v1.5 as a torch.nn.Module, in the style of torchvision.models.resnet (Bottleneck, v1.5).

    from levelfield.reference.image_resnet50_standard.pytorch.model import ResNet50
    model = ResNet50()                         # 25,557,032 trainable parameters
    logits = model(images)                     # float32 [N, 3, 224, 224] (NCHW) -> [N, 1000]
    model = ResNet50(SPEC.resized(...))        # the equivalence tests' reduced network

Sizes come from a ResNetSpec (common/model_spec.py); initial values are loaded
from the neutral weights (weights.py), so the modules' own init is irrelevant.
Batch norm: fmnist-resnet's constants (eps 1e-5, running decay 0.9).
"""

from __future__ import annotations

import torch
from torch import nn

from levelfield.reference.fmnist_resnet.pytorch.model import batch_norm
from levelfield.reference.image_resnet50_standard.common.model_spec import SPEC, ResNetSpec, has_projection


class Bottleneck(nn.Module):
    """1x1 -> 3x3 (stride) -> 1x1 convs with BN, + shortcut, ReLU: [N, cin, H, W] -> [N, 4w, H/s, W/s]."""

    def __init__(self, in_channels: int, width: int, stride: int, expansion: int):
        super().__init__()
        out = width * expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = batch_norm(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)  # v1.5: stride here
        self.bn2 = batch_norm(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = batch_norm(out)
        self.relu = nn.ReLU(inplace=True)
        self.proj = None  # identity shortcut unless the shape changes
        if has_projection(in_channels, out, stride):
            self.proj = nn.Conv2d(in_channels, out, 1, stride=stride, bias=False)
            self.proj_bn = batch_norm(out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x if self.proj is None else self.proj_bn(self.proj(x))
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + shortcut)


class ResNet50(nn.Module):
    def __init__(self, spec: ResNetSpec = SPEC):
        super().__init__()
        self.spec = spec
        self.conv = nn.Conv2d(3, spec.stem_width, 7, stride=2, padding=3, bias=False)
        self.bn = batch_norm(spec.stem_width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.blocks = nn.ModuleDict(
            {name: Bottleneck(cin, width, stride, spec.expansion) for name, cin, width, stride in spec.blocks()}
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(spec.features, spec.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn(self.conv(x))))  # [N, 64, 56, 56]
        for block in self.blocks.values():  # -> [N, 2048, 7, 7]
            x = block(x)
        return self.head(torch.flatten(self.pool(x), 1))  # [N, 1000]
