"""The residual CNN family as ONNX graphs: fmnist-resnet's basic-block network and ResNet-50 v1.5's bottlenecks.

    from levelfield.reference.frameworks.onnxruntime import resnet
    x = resnet.stem(g, images_nchw, cin=1, cout=16, kernel=3, stride=1, pad=1, eps=1e-5, max_pool=False)
    x = resnet.basic_block(g, x, "block2", 16, 32, stride=2, eps=1e-5)
    logits = resnet.head(g, x, features=64, classes=10)

The same math as the PyTorch models (reference/fmnist_resnet/pytorch/model.py,
reference/image_resnet50_standard/pytorch/model.py) and the float64 numpy
network of tests/test_equivalence_fmnist_resnet.py, in NCHW: convolutions
without bias, padding 1 on each side of every 3x3 (also at stride 2; no
'SAME'), none on a 1x1; batch norm in inference mode with the running
statistics and the task's epsilon; the block's stride on its first 3x3 (basic)
or its 3x3 (bottleneck, v1.5); the projection shortcut (1x1 with the stride,
batch norm) where the shape changes; ReLU after the add; ResNet-50's stem max
pool 3x3 / 2 padded 1 (ONNX's MaxPool never takes a pad value, as -inf padding);
global average pool, then the dense head with bias. Names are the neutral
weights' names (common/model_spec.py), so weights.py only changes layouts.
"""

from __future__ import annotations

from levelfield.reference.frameworks.onnxruntime.graph import Graph, batch_norm, conv, dense


def conv_bn(g: Graph, x: str, prefix: str, conv_name: str, bn_name: str, shape: tuple, stride: int, eps: float) -> str:
    """conv (kernel `prefix.conv_name.kernel`, HWIO `shape`, pad kernel // 2) then inference-mode batch norm."""
    y = conv(g, x, f"{prefix}.{conv_name}.kernel", shape, stride, shape[0] // 2)
    return batch_norm(g, y, f"{prefix}.{bn_name}", shape[3], eps)


def stem(g: Graph, x: str, cin: int, cout: int, kernel: int, stride: int, eps: float, max_pool: bool) -> str:
    """conv kernel x kernel (stride, pad kernel // 2), BN, ReLU; then ResNet-50's max pool 3x3 / 2 pad 1."""
    y = g.op("Relu", conv_bn(g, x, "stem", "conv", "bn", (kernel, kernel, cin, cout), stride, eps))
    if max_pool:
        y = g.op("MaxPool", y, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    return y


def shortcut(g: Graph, x: str, name: str, cin: int, cout: int, stride: int, eps: float) -> str:
    """The identity, or the 1x1 projection with the block's stride + BN where the shape changes."""
    if stride == 1 and cin == cout:
        return x
    return conv_bn(g, x, name, "proj", "proj_bn", (1, 1, cin, cout), stride, eps)


def basic_block(g: Graph, x: str, name: str, cin: int, cout: int, stride: int, eps: float) -> str:
    """conv3x3(stride)-BN-ReLU-conv3x3-BN + shortcut, ReLU: [N, cin, H, W] -> [N, cout, H/stride, W/stride]."""
    y = g.op("Relu", conv_bn(g, x, name, "conv1", "bn1", (3, 3, cin, cout), stride, eps))
    y = conv_bn(g, y, name, "conv2", "bn2", (3, 3, cout, cout), 1, eps)
    return g.op("Relu", g.op("Add", y, shortcut(g, x, name, cin, cout, stride, eps)))


def bottleneck(g: Graph, x: str, name: str, cin: int, width: int, out: int, stride: int, eps: float) -> str:
    """1x1 -> 3x3 (stride, v1.5) -> 1x1 with BN, + shortcut, ReLU: [N, cin, H, W] -> [N, out, H/s, W/s]."""
    y = g.op("Relu", conv_bn(g, x, name, "conv1", "bn1", (1, 1, cin, width), 1, eps))
    y = g.op("Relu", conv_bn(g, y, name, "conv2", "bn2", (3, 3, width, width), stride, eps))
    y = conv_bn(g, y, name, "conv3", "bn3", (1, 1, width, out), 1, eps)
    return g.op("Relu", g.op("Add", y, shortcut(g, x, name, cin, out, stride, eps)))


def head(g: Graph, x: str, features: int, classes: int) -> str:
    """Global average pool [N, C, H, W] -> [N, C], then the dense head -> logits [N, classes]."""
    pooled = g.op("Flatten", g.op("GlobalAveragePool", x), axis=1)
    return dense(g, pooled, "head", features, classes)
