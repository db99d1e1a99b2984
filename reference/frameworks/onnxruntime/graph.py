"""A small builder of ONNX graphs over `onnx.helper`, and the ops every family's builder shares.

    from levelfield.reference.frameworks.onnxruntime.graph import Graph, FLOAT
    g = Graph("dlrm-small")
    x = g.input("dense", FLOAT, ["batch", 13])
    y = g.op("Relu", dense(g, x, "bottom.dense0", 13, 64))
    g.output(y, "logits", FLOAT, ["batch", 64])
    model = g.model(initializers)          # onnx.ModelProto; weights bound by each task's weights.py

levelfield writes its ONNX graphs itself, node by node from each task's model
spec, instead of exporting one of the three frameworks' models (torch.onnx,
tf2onnx, jax2onnx): the graph then depends on no other framework's code or
version (nothing of PyTorch, TensorFlow or JAX is imported when ONNX Runtime
builds or serves a model), every node can be read against the numpy reference
(tests/test_equivalence_*.py), and the same neutral .npz weights bind to it
by name (docs/inference.md, ONNX Runtime).

A graph is built without its weights: `param(name, shape)` declares a weight
by its initializer name, and `model(initializers)` binds the arrays (from the
task's weights.py) when the model file is written (model_file.py), so one
built structure serves any weights. Small constants (a reshape's target
shape, the normalisation of image pixels) live in the graph itself.

Every tensor is float32 unless stated; the batch is a symbolic dimension
("batch"), so one session serves any number of rows.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# ONNX's default domain at this opset: LayerNormalization (17) and Gelu (20) are ops of their own.
OPSET = 21
IR_VERSION = 10  # the IR version that goes with opset 21 (onnx.helper.VERSION_TABLE); ONNX Runtime >= 1.16 reads it
FLOAT, INT32, INT64, UINT8 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8
BATCH = "batch"  # the symbolic batch dimension of every input and output


class Graph:
    """Nodes, inputs, outputs, declared weights and constants of one network, named as it is built."""

    def __init__(self, name: str):
        self.name = name
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.params: dict[str, tuple[int, ...]] = {}  # initializer name -> shape, bound by model()
        self.constants: list[onnx.TensorProto] = []  # small constants carried by the graph itself
        self._names: dict[str, int] = {}

    def _fresh(self, hint: str) -> str:
        count = self._names.get(hint, 0)
        self._names[hint] = count + 1
        return f"{hint}_{count}"

    def input(self, name: str, elem_type: int, shape: list) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def output(self, value: str, name: str, elem_type: int, shape: list) -> None:
        """Name the graph output `name` (an Identity from `value`, so outputs keep readable names)."""
        self.nodes.append(helper.make_node("Identity", [value], [name]))
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, shape))

    def param(self, name: str, shape: tuple[int, ...]) -> str:
        """A weight of the network by its initializer name and shape; its value is bound by model()."""
        if self.params.setdefault(name, tuple(shape)) != tuple(shape):
            raise ValueError(f"{self.name}: weight {name} declared with shapes {self.params[name]} and {shape}")
        return name

    def const(self, value: np.ndarray, hint: str = "const") -> str:
        """A constant carried in the graph (a shape, an index list, the pixel normalisation)."""
        name = self._fresh(hint)
        self.constants.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, hint: str | None = None, **attributes: object) -> str:
        """One node with one output; its output's name."""
        out = self._fresh(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attributes))
        return out

    def model(self, initializers: list[onnx.TensorProto]) -> onnx.ModelProto:
        """The ModelProto with `initializers` (TensorProtos of every declared weight, data inline or external)."""
        bound = {t.name for t in initializers}
        if bound != set(self.params):
            missing, extra = sorted(set(self.params) - bound), sorted(bound - set(self.params))
            raise ValueError(f"{self.name}: weights missing {missing[:3]}, unexpected {extra[:3]}")
        graph = helper.make_graph(
            self.nodes, self.name, self.inputs, self.outputs, initializer=[*self.constants, *initializers]
        )
        model = helper.make_model(
            graph, producer_name="levelfield", opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
        )
        return model  # checked by onnx.checker once written beside its weights (model_file.py)


# -- ops the families share ---------------------------------------------------------------------------------
def dense(g: Graph, x: str, prefix: str, fan_in: int, fan_out: int) -> str:
    """x [..., in] @ kernel [in, out] + bias [out] (the neutral layout needs no transpose)."""
    y = g.op("MatMul", x, g.param(f"{prefix}.kernel", (fan_in, fan_out)), hint=prefix.replace(".", "_"))
    return g.op("Add", y, g.param(f"{prefix}.bias", (fan_out,)))


def layer_norm(g: Graph, x: str, prefix: str, width: int, epsilon: float) -> str:
    """LayerNormalization over the last axis: (x - mean) / sqrt(var + eps) * scale + bias, biased variance."""
    scale, bias = g.param(f"{prefix}.scale", (width,)), g.param(f"{prefix}.bias", (width,))
    return g.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=float(epsilon))


def batch_norm(g: Graph, x: str, prefix: str, channels: int, epsilon: float) -> str:
    """Inference-mode batch norm over NCHW's channel axis with the running statistics:
    (x - mean) / sqrt(var + eps) * scale + bias (ONNX BatchNormalization with training_mode 0)."""
    parts = [g.param(f"{prefix}.{part}", (channels,)) for part in ("scale", "bias", "mean", "var")]
    return g.op("BatchNormalization", x, *parts, epsilon=float(epsilon), hint=prefix.replace(".", "_"))


def conv(g: Graph, x: str, name: str, shape_hwio: tuple[int, int, int, int], stride: int, pad: int) -> str:
    """A bias-free convolution, NCHW; the weight is OIHW (weights.py transposes the neutral HWIO)."""
    kh, kw, cin, cout = shape_hwio
    w = g.param(name, (cout, cin, kh, kw))
    return g.op("Conv", x, w, kernel_shape=[kh, kw], strides=[stride, stride], pads=[pad, pad, pad, pad], hint="conv")
