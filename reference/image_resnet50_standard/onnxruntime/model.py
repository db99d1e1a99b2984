"""resnet50-v1.5 as an ONNX graph, written with onnx.helper from a ResNetSpec, with its input normalisation.

    from levelfield.reference.image_resnet50_standard.onnxruntime.model import build_graph
    graph = build_graph(SPEC)     # images uint8 [N, 224, 224, 3] -> logits float32 [N, 1000]; weights bound later

The residual CNN family's builder (reference/frameworks/onnxruntime/resnet.py)
at the spec's sizes: the stem conv7x7 / 2, BN, ReLU, max pool 3x3 / 2, the
bottlenecks of spec.blocks() (v1.5: the stride on the 3x3), global average
pool, the dense head. The uint8 centre crops are normalised inside the graph
as every framework's predict does (common/augment.py: (float32(pixel) - MEAN)
* INV_STD, a subtraction then a multiplication by float32 constants) and put
in NCHW order.
"""

from __future__ import annotations

from levelfield.reference.fmnist_resnet.common.model_spec import BN_EPSILON
from levelfield.reference.frameworks.onnxruntime import resnet
from levelfield.reference.frameworks.onnxruntime.graph import BATCH, FLOAT, UINT8, Graph
from levelfield.reference.image_resnet50_standard.common.augment import INV_STD, MEAN
from levelfield.reference.image_resnet50_standard.common.model_spec import IN_CHANNELS, SPEC, ResNetSpec


def build_graph(spec: ResNetSpec = SPEC) -> Graph:
    """ "images" uint8 [N, S, S, 3] (the centre crops) -> "logits" float32 [N, classes]; BN in inference mode."""
    g = Graph("resnet50-v1.5")
    side = spec.image_size
    images = g.input("images", UINT8, [BATCH, side, side, IN_CHANNELS])
    x = g.op("Mul", g.op("Sub", g.op("Cast", images, to=FLOAT), g.const(MEAN, "mean")), g.const(INV_STD, "inv_std"))
    x = g.op("Transpose", x, perm=[0, 3, 1, 2])  # NHWC -> NCHW
    x = resnet.stem(g, x, IN_CHANNELS, spec.stem_width, 7, 2, BN_EPSILON, max_pool=True)
    for name, cin, width, stride in spec.blocks():
        x = resnet.bottleneck(g, x, name, cin, width, width * spec.expansion, stride, BN_EPSILON)
    g.output(resnet.head(g, x, spec.features, spec.num_classes), "logits", FLOAT, [BATCH, spec.num_classes])
    return g
