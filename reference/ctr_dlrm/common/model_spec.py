"""dlrm-small for ctr-dlrm: architecture constants, neutral weight names and shapes, initial weights.

    from levelfield.reference.ctr_dlrm.common.model_spec import init_weights, PARAMETER_SHAPES, TRAINABLE
    weights = init_weights(seed=0)          # {"embedding0.table": float32 [1000, 16], ...}

Every framework builds the network from the constants below and loads the
same `init_weights(seed)`, so all three start from identical numbers. The
number of dense features and the rows of each embedding table come from the
rules (`dataset.params.dense_features`, `dataset.params.cardinalities`), not
from a copy here.

Network (B = batch; as Facebook's DLRM with the "dot" interaction):

    bottom  dense [B, 13] -> Linear 13->64, ReLU -> Linear 64->16, ReLU       -> x [B, 16]
    embed   sparse [B, 8] -> one [rows_f, 16] table per field f, row lookup    -> e_f [B, 16]
    stack   [x, e_0, ..., e_7]                                                 -> T [B, 9, 16]
    dots    Z = T T^T [B, 9, 9]; Z[:, i, j] for i < j in row-major order       -> [B, 36]
            ((0,1), (0,2), ..., (0,8), (1,2), ..., (7,8): INTERACTION_PAIRS)
    top     concat [x, dots] [B, 52] -> Linear 52->64, ReLU -> Linear 64->1    -> logit [B]

Neutral names and layouts (dense kernels [in, out]):

    embedding{f}.table      [cardinality_f, 16]    f = 0..7
    bottom.dense{i}.kernel  [in, out]              i = 0, 1
    bottom.dense{i}.bias    [out]
    top.dense{i}.kernel     [in, out]              i = 0, 1
    top.dense{i}.bias       [out]

All of them are trainable (no buffers): 30,160 embedding + 1,936 bottom +
3,457 top = 35,553 parameters, the rules' `model.parameters`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

TASK_ID = "ctr-dlrm"
EMBEDDING_DIM = 16  # width of every embedding table = width of the bottom MLP's output
BOTTOM_MLP = (64, 16)  # output widths; ReLU after every layer (DLRM's bottom MLP)
TOP_MLP = (64, 1)  # output widths; ReLU after every layer but the last (the logit)


@functools.lru_cache(maxsize=1)
def _dataset_params() -> dict:
    """The rules' dataset params; imported lazily so `common/` stays importable without side effects."""
    from levelfield.rules import load_suite

    return load_suite().task(TASK_ID).dataset["params"]


CARDINALITIES: tuple[int, ...] = tuple(int(c) for c in _dataset_params()["cardinalities"])
DENSE_FEATURES: int = int(_dataset_params()["dense_features"])
NUM_FIELDS = len(CARDINALITIES)
NUM_VECTORS = NUM_FIELDS + 1  # bottom-MLP output + one embedding per field: 9
# Distinct pairs (i, j), i < j, row-major over the upper triangle: 36 for 9 vectors.
INTERACTION_PAIRS: tuple[tuple[int, int], ...] = tuple(
    (i, j) for i in range(NUM_VECTORS) for j in range(i + 1, NUM_VECTORS)
)
# The same pairs as flat indices into Z reshaped [B, 81] (one gather instead of two).
INTERACTION_FLAT_INDEX = np.array([i * NUM_VECTORS + j for i, j in INTERACTION_PAIRS], dtype=np.int32)
TOP_INPUT = BOTTOM_MLP[-1] + len(INTERACTION_PAIRS)  # 16 + 36 = 52
assert BOTTOM_MLP[-1] == EMBEDDING_DIM, "dot interactions need bottom output width == embedding width"


def mlp_layers(prefix: str, in_features: int, widths: tuple[int, ...]) -> list[tuple[str, int, int]]:
    """(neutral prefix, in, out) of each dense layer of an MLP, e.g. ("bottom.dense0", 13, 64)."""
    layers = []
    for i, width in enumerate(widths):
        layers.append((f"{prefix}.dense{i}", in_features, width))
        in_features = width
    return layers


BOTTOM_LAYERS = mlp_layers("bottom", DENSE_FEATURES, BOTTOM_MLP)
TOP_LAYERS = mlp_layers("top", TOP_INPUT, TOP_MLP)


def _parameter_shapes() -> dict[str, tuple]:
    shapes = {f"embedding{f}.table": (rows, EMBEDDING_DIM) for f, rows in enumerate(CARDINALITIES)}
    for name, fan_in, fan_out in BOTTOM_LAYERS + TOP_LAYERS:
        shapes[f"{name}.kernel"] = (fan_in, fan_out)
        shapes[f"{name}.bias"] = (fan_out,)
    return shapes


PARAMETER_SHAPES: dict[str, tuple] = _parameter_shapes()
TRAINABLE: tuple[str, ...] = tuple(PARAMETER_SHAPES)  # no buffers in this model


def trainable_count() -> int:
    """Number of trainable scalars (the rules' model.parameters: 35,553)."""
    return sum(math.prod(PARAMETER_SHAPES[n]) for n in TRAINABLE)


def init_weights(seed: int) -> dict[str, np.ndarray]:
    """Initial neutral weights, float32, drawn in PARAMETER_SHAPES order from PCG64(seed).

    As the DLRM reference (facebookresearch/dlrm, dlrm_s_pytorch.py):
    embedding table of n rows: uniform(-sqrt(1/n), sqrt(1/n));
    dense kernel [in, out]: normal(0, sqrt(2 / (in + out)));
    dense bias [out]: normal(0, sqrt(1 / out)).
    Drawn in float64, then rounded to float32.
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    weights = {}
    for name, shape in PARAMETER_SHAPES.items():
        part = name.rsplit(".", 1)[1]
        if part == "table":
            bound = math.sqrt(1.0 / shape[0])
            value = rng.uniform(-bound, bound, size=shape)
        elif part == "kernel":
            value = rng.normal(0.0, math.sqrt(2.0 / (shape[0] + shape[1])), size=shape)
        else:  # bias
            value = rng.normal(0.0, math.sqrt(1.0 / shape[0]), size=shape)
        weights[name] = value.astype(np.float32)
    return weights


# predict's output per row (one logit float32), e.g. what the harness-only model `none` returns.
OUTPUT_SHAPE: tuple[int, ...] = ()


# -- LoadGen responses ------------------------------------------------------------------
# What the runner answers each LoadGen sample with, and so what mlperf_log_accuracy.json
# holds: the least the metric needs. ROC AUC ranks the scores, so the response is the
# sample's logit itself, one little-endian float32; the accuracy scorer reads rows of
# this dtype and shape.
RESPONSE_DTYPE = np.dtype("<f4")
RESPONSE_SHAPE: tuple[int, ...] = ()


def to_response(outputs: np.ndarray) -> np.ndarray:
    """Response rows float32 [N] (logits) from predict's logits float32 [N] (or [N, 1])."""
    outputs = np.asarray(outputs)
    return outputs.reshape(len(outputs)).astype(RESPONSE_DTYPE, copy=False)
