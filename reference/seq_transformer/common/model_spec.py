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
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.seq_transformer.common.metric import predicted_tokens

VOCAB_SIZE = 10  # digits 0..9 (rules dataset.params.vocab_size)
SEQ_LEN = 12  # tokens per sequence (rules dataset.params.seq_len)
NUM_CLASSES = 10  # the sorted digit at each position
D_MODEL = 64
NUM_HEADS = 4
HEAD_DIM = D_MODEL // NUM_HEADS  # 16; attention logits are scaled by 1 / sqrt(HEAD_DIM)
FF_DIM = 128
NUM_LAYERS = 2
LN_EPS = 1e-5  # every LayerNorm (torch's default; Flax's 1e-6 and Keras' 1e-3 are overridden)
INIT_STD = 0.02  # normal(0, 0.02) for embeddings and every dense kernel (GPT-2 / BERT style)


def _layer_shapes(prefix: str) -> dict[str, tuple[int, ...]]:
    shapes = {f"{prefix}.attention_norm.scale": (D_MODEL,), f"{prefix}.attention_norm.bias": (D_MODEL,)}
    for proj in ("query", "key", "value", "output"):
        shapes[f"{prefix}.attention.{proj}.kernel"] = (D_MODEL, D_MODEL)
        shapes[f"{prefix}.attention.{proj}.bias"] = (D_MODEL,)
    shapes.update(
        {
            f"{prefix}.mlp_norm.scale": (D_MODEL,),
            f"{prefix}.mlp_norm.bias": (D_MODEL,),
            f"{prefix}.mlp.dense1.kernel": (D_MODEL, FF_DIM),
            f"{prefix}.mlp.dense1.bias": (FF_DIM,),
            f"{prefix}.mlp.dense2.kernel": (FF_DIM, D_MODEL),
            f"{prefix}.mlp.dense2.bias": (D_MODEL,),
        }
    )
    return shapes


def _all_shapes() -> dict[str, tuple[int, ...]]:
    shapes = {"token_embedding.embedding": (VOCAB_SIZE, D_MODEL), "position_embedding.embedding": (SEQ_LEN, D_MODEL)}
    for i in range(NUM_LAYERS):
        shapes.update(_layer_shapes(f"layer{i}"))
    shapes.update(
        {
            "final_norm.scale": (D_MODEL,),
            "final_norm.bias": (D_MODEL,),
            "head.kernel": (D_MODEL, NUM_CLASSES),
            "head.bias": (NUM_CLASSES,),
        }
    )
    return shapes


# name -> shape, in the order init_weights draws them. This model has no buffers.
PARAMETER_SHAPES: dict[str, tuple[int, ...]] = _all_shapes()
TRAINABLE: tuple[str, ...] = tuple(PARAMETER_SHAPES)


def trainable_count() -> int:
    return int(sum(np.prod(PARAMETER_SHAPES[name]) for name in TRAINABLE))


def init_weights(seed: int) -> dict[str, np.ndarray]:
    """Initial weights for `seed`: float32, neutral names and layouts.

    Embeddings and dense kernels: normal(0, INIT_STD), drawn in PARAMETER_SHAPES
    order from one PCG64 stream; biases 0; LayerNorm scale 1, bias 0.
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    weights = {}
    for name, shape in PARAMETER_SHAPES.items():
        kind = name.rsplit(".", 1)[1]
        if kind in ("kernel", "embedding"):
            value = rng.normal(0.0, INIT_STD, size=shape)
        elif kind == "scale":
            value = np.ones(shape)
        else:  # bias
            value = np.zeros(shape)
        weights[name] = value.astype(np.float32)
    return weights


# predict's output per row (logits float32), e.g. what the harness-only model `none` returns.
OUTPUT_SHAPE: tuple[int, ...] = (SEQ_LEN, VOCAB_SIZE)


# -- LoadGen responses ------------------------------------------------------------------
# What the runner answers each LoadGen sample with, and so what mlperf_log_accuracy.json
# holds: the least the metric needs, as MLPerf's ResNet answers with the predicted class.
# Here the predicted digit at each of the 12 positions, int8 [12]: 12 bytes instead of
# 12 x 10 float32 logits; the accuracy scorer reads rows of this dtype and shape.
RESPONSE_DTYPE = np.dtype("i1")
RESPONSE_SHAPE: tuple[int, ...] = (SEQ_LEN,)


def to_response(outputs: np.ndarray) -> np.ndarray:
    """Response rows int8 [N, 12] (predicted digits) from predict's logits float32 [N, 12, 10]."""
    return predicted_tokens(outputs)
