"""Architecture constants, neutral weight names/shapes and the one initialisation of `encoder-small`.

    from levelfield.reference.seq_transformer.common import model_spec
    weights = model_spec.init_weights(seed=0)        # {name: float32 array}, neutral layouts
    model_spec.PARAMETER_SHAPES["layer0.attention.query.kernel"]    # (64, 64)  [in, out]
    model_spec.trainable_count()                     # 69130, the rules' model.parameters

Every framework reads its sizes and epsilons from here and starts from
`init_weights(seed)`, so the three reference models are the same network with
the same starting point. The network (rules/1.0/tasks/seq-transformer.yaml):

    tokens int32 [B, 12] -> token embedding [10, 64] + position embedding [12, 64]
    2 x pre-norm encoder layer (no dropout, no mask, bidirectional):
        x = x + MHA(LN(x))          4 heads x 16, separate q/k/v/output dense 64->64 with bias,
                                    softmax(q k^T / sqrt(16)) v
        x = x + FF(LN(x))           dense 64->128, exact (erf) GELU, dense 128->64
    final LN -> per-position dense 64 -> 10     logits float32 [B, 12, 10]

Neutral layouts: dense kernels [in, out], biases [out], LayerNorm `scale`/`bias`,
embeddings [rows, dim]. Attention projections keep the head split implicit:
output feature f of query/key/value belongs to head f // 16, dimension f % 16
(the row-major reshape [64, 4, 16] that Flax and Keras use, and the head split
torch.nn.MultiheadAttention does); the output projection's input feature
h * 16 + d is head h, dimension d.

The same network at other sizes (seq-transformer-standard, BERT-base's encoder)
is a `TransformerSpec` built from that task's rules (`TransformerSpec.from_task`,
which reads `model.architecture` where the rules give it); every framework's
model, weights mapping and implementation take a spec, and the module-level
names below are this task's (`SPEC`), so the tiny task's code reads as before.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from levelfield.reference.seq_transformer.common.metric import predicted_tokens

if TYPE_CHECKING:
    from levelfield.rules.loader import Task

# encoder-small's own sizes: rules 1.0's seq-transformer has no model.architecture, so they live here.
VOCAB_SIZE = 10  # digits 0..9 (rules dataset.params.vocab_size)
SEQ_LEN = 12  # tokens per sequence (rules dataset.params.seq_len)
NUM_CLASSES = 10  # the sorted digit at each position
D_MODEL = 64
NUM_HEADS = 4
FF_DIM = 128
NUM_LAYERS = 2
LN_EPS = 1e-5  # every LayerNorm (torch's default; Flax's 1e-6 and Keras' 1e-3 are overridden)
INIT_STD = 0.02  # normal(0, 0.02) for embeddings and every dense kernel (GPT-2 / BERT style)


@dataclass(frozen=True)
class TransformerSpec:
    """One pre-norm encoder's sizes (the layout above); every shape follows from these seven."""

    task_id: str
    vocab_size: int  # rows of the token embedding
    seq_len: int  # rows of the position embedding = tokens per sequence
    num_classes: int  # outputs per position
    d_model: int
    num_heads: int
    ff_dim: int
    num_layers: int

    def __post_init__(self):
        if self.d_model % self.num_heads:
            raise ValueError(f"{self.task_id}: d_model {self.d_model} is not a multiple of num_heads {self.num_heads}")

    @classmethod
    def from_task(cls, task: Task) -> TransformerSpec:
        """The spec of a task's rules: vocabulary and sequence length from dataset.params, widths from
        model.architecture (absent, as in seq-transformer's rules: encoder-small's sizes above)."""
        params = task.dataset["params"]
        arch = task.model.get("architecture", {})
        return cls(
            task_id=task.id,
            vocab_size=int(params["vocab_size"]),
            seq_len=int(params["seq_len"]),
            num_classes=int(task.dataset["num_classes"]),
            d_model=int(arch.get("d_model", D_MODEL)),
            num_heads=int(arch.get("num_heads", NUM_HEADS)),
            ff_dim=int(arch.get("ff_dim", FF_DIM)),
            num_layers=int(arch.get("num_layers", NUM_LAYERS)),
        )

    def resized(self, **sizes: int) -> TransformerSpec:
        """The same network with some sizes replaced (tests: the full standard model is slow on CI)."""
        return replace(self, **sizes)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads  # attention logits are scaled by 1 / sqrt(head_dim)

    def _layer_shapes(self, prefix: str) -> dict[str, tuple[int, ...]]:
        d, ff = self.d_model, self.ff_dim
        shapes = {f"{prefix}.attention_norm.scale": (d,), f"{prefix}.attention_norm.bias": (d,)}
        for proj in ("query", "key", "value", "output"):
            shapes[f"{prefix}.attention.{proj}.kernel"] = (d, d)
            shapes[f"{prefix}.attention.{proj}.bias"] = (d,)
        shapes.update(
            {
                f"{prefix}.mlp_norm.scale": (d,),
                f"{prefix}.mlp_norm.bias": (d,),
                f"{prefix}.mlp.dense1.kernel": (d, ff),
                f"{prefix}.mlp.dense1.bias": (ff,),
                f"{prefix}.mlp.dense2.kernel": (ff, d),
                f"{prefix}.mlp.dense2.bias": (d,),
            }
        )
        return shapes

    @functools.cached_property
    def parameter_shapes(self) -> dict[str, tuple[int, ...]]:
        """Neutral name -> shape, in the order init_weights draws them. This model has no buffers."""
        shapes = {
            "token_embedding.embedding": (self.vocab_size, self.d_model),
            "position_embedding.embedding": (self.seq_len, self.d_model),
        }
        for i in range(self.num_layers):
            shapes.update(self._layer_shapes(f"layer{i}"))
        shapes.update(
            {
                "final_norm.scale": (self.d_model,),
                "final_norm.bias": (self.d_model,),
                "head.kernel": (self.d_model, self.num_classes),
                "head.bias": (self.num_classes,),
            }
        )
        return shapes

    @property
    def trainable(self) -> tuple[str, ...]:
        return tuple(self.parameter_shapes)

    def trainable_count(self) -> int:
        """Number of trainable scalars, from the shapes alone (nothing allocated)."""
        return sum(math.prod(shape) for shape in self.parameter_shapes.values())

    def init_weights(self, seed: int) -> dict[str, np.ndarray]:
        """Initial weights for `seed`: float32, neutral names and layouts.

        Embeddings and dense kernels: normal(0, INIT_STD), drawn in parameter_shapes
        order from one PCG64 stream; biases 0; LayerNorm scale 1, bias 0.
        """
        rng = np.random.Generator(np.random.PCG64(seed))
        weights = {}
        for name, shape in self.parameter_shapes.items():
            kind = name.rsplit(".", 1)[1]
            if kind in ("kernel", "embedding"):
                value = rng.normal(0.0, INIT_STD, size=shape)
            elif kind == "scale":
                value = np.ones(shape)
            else:  # bias
                value = np.zeros(shape)
            weights[name] = value.astype(np.float32)
        return weights

    @property
    def output_shape(self) -> tuple[int, ...]:
        """predict's output per row (logits float32), e.g. what the harness-only model `none` returns."""
        return (self.seq_len, self.num_classes)

    @property
    def response_dtype(self) -> np.dtype:
        """The predicted token's dtype in LoadGen responses: int8 while the classes fit (encoder-small's
        10), else int16 (BERT's 30,522-token vocabulary)."""
        return np.dtype("i1") if self.num_classes <= 128 else np.dtype("i2")


# encoder-small (tests/test_standard_rules.py checks that TransformerSpec.from_task of its rules is this).
SPEC = TransformerSpec(
    task_id="seq-transformer",
    vocab_size=VOCAB_SIZE,
    seq_len=SEQ_LEN,
    num_classes=NUM_CLASSES,
    d_model=D_MODEL,
    num_heads=NUM_HEADS,
    ff_dim=FF_DIM,
    num_layers=NUM_LAYERS,
)
HEAD_DIM = SPEC.head_dim  # 16
# name -> shape, in the order init_weights draws them. This model has no buffers.
PARAMETER_SHAPES: dict[str, tuple[int, ...]] = SPEC.parameter_shapes
TRAINABLE: tuple[str, ...] = SPEC.trainable
# The model_spec functions every task has (the harness and the tests read them here), its SPEC's own.
trainable_count = SPEC.trainable_count
init_weights = SPEC.init_weights


# predict's output per row (logits float32), e.g. what the harness-only model `none` returns.
OUTPUT_SHAPE: tuple[int, ...] = SPEC.output_shape


# -- LoadGen responses ------------------------------------------------------------------
# What the runner answers each LoadGen sample with, and so what mlperf_log_accuracy.json
# holds: the least the metric needs, as MLPerf's ResNet answers with the predicted class.
# Here the predicted digit at each of the 12 positions, int8 [12]: 12 bytes instead of
# 12 x 10 float32 logits; the accuracy scorer reads rows of this dtype and shape.
RESPONSE_DTYPE = SPEC.response_dtype
RESPONSE_SHAPE: tuple[int, ...] = (SEQ_LEN,)


def to_response(outputs: np.ndarray) -> np.ndarray:
    """Response rows int8 [N, 12] (predicted digits) from predict's logits float32 [N, 12, 10]."""
    return predicted_tokens(outputs)
