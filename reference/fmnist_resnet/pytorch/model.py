"""resnet-small as a torch.nn.Module, in the style of torchvision.models.resnet (BasicBlock).

    from levelfield.reference.fmnist_resnet.pytorch.model import ResNetSmall
    model = ResNetSmall()
    logits = model(images)            # images float32 [N, 1, 28, 28] (NCHW) -> [N, 10]

Constants come from common/model_spec.py; initial values are loaded from the
neutral weights (weights.py), so the modules' own default init is irrelevant.
"""

from __future__ import annotations

import torch
from torch import nn

from levelfield.reference.fmnist_resnet.common import model_spec as spec

# torch's BN momentum is the weight of the *new* batch statistic: 1 - decay.
BN_MOMENTUM = 1.0 - spec.BN_DECAY


def batch_norm(channels: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(channels, eps=spec.BN_EPSILON, momentum=BN_MOMENTUM)


class BasicBlock(nn.Module):
    """conv3x3(stride)-BN-ReLU-conv3x3-BN + shortcut, ReLU. [N, cin, H, W] -> [N, cout, H/stride, W/stride]."""

    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = batch_norm(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, stride=1, padding=1, bias=False)
        self.bn2 = batch_norm(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.proj = None  # identity shortcut unless the shape changes
        if spec.block_has_projection(in_channels, out_channels, stride):
            self.proj = nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False)
            self.proj_bn = batch_norm(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x if self.proj is None else self.proj_bn(self.proj(x))
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + shortcut)


class ResNetSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(spec.IN_CHANNELS, spec.STEM_CHANNELS, 3, padding=1, bias=False)
        self.bn = batch_norm(spec.STEM_CHANNELS)
        self.relu = nn.ReLU(inplace=True)
        channels, blocks = spec.STEM_CHANNELS, {}
        for name, out_channels, stride in spec.BLOCKS:
            blocks[name] = BasicBlock(channels, out_channels, stride)
            channels = out_channels
        self.blocks = nn.ModuleDict(blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(channels, spec.NUM_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn(self.conv(x)))  # [N, 16, 28, 28]
        for block in self.blocks.values():  # -> [N, 64, 7, 7]
            x = block(x)
        return self.head(torch.flatten(self.pool(x), 1))  # [N, 10]
