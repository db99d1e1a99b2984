"""resnet-small as an ONNX graph, written with onnx.helper from common/model_spec.py.

    from levelfield.reference.fmnist_resnet.onnxruntime.model import build_graph
    graph = build_graph()             # images float32 [N, 28, 28] -> logits float32 [N, 10]; weights bound later

The network of common/model_spec.py through the residual CNN family's builder
(reference/frameworks/onnxruntime/resnet.py): the images get their channel axis
(NCHW, [N, 1, 28, 28]) inside the graph, then the stem conv3x3 1->16, BN, ReLU,
the three basic blocks of spec.BLOCKS, global average pool and the dense head.
image-resnet50-standard's graph is the same family's at ResNet-50's sizes.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.fmnist_resnet.common import model_spec as spec
from levelfield.reference.frameworks.onnxruntime import resnet
from levelfield.reference.frameworks.onnxruntime.graph import BATCH, FLOAT, Graph


def build_graph() -> Graph:
    """resnet-small: "images" float32 [N, 28, 28] in [0, 1] -> "logits" float32 [N, 10]; BN in inference mode."""
    g = Graph("resnet-small")
    images = g.input("images", FLOAT, [BATCH, spec.IMAGE_SIZE, spec.IMAGE_SIZE])
    x = g.op("Unsqueeze", images, g.const(np.array([1], np.int64), "channel_axis"))  # [N, 1, 28, 28]
    x = resnet.stem(g, x, spec.IN_CHANNELS, spec.STEM_CHANNELS, 3, 1, spec.BN_EPSILON, max_pool=False)
    channels = spec.STEM_CHANNELS
    for name, out_channels, stride in spec.BLOCKS:  # -> [N, 64, 7, 7]
        x = resnet.basic_block(g, x, name, channels, out_channels, stride, spec.BN_EPSILON)
        channels = out_channels
    logits = resnet.head(g, x, channels, spec.NUM_CLASSES)
    g.output(logits, "logits", FLOAT, [BATCH, spec.NUM_CLASSES])
    return g
