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

The same network at other widths (ctr-dlrm-standard, MLPerf's DLRM) is a
`DLRMSpec` built from that task's rules (`DLRMSpec.from_task`, which reads
`model.architecture` where the rules give it); every framework's model,
weights mapping and implementation take a spec, and the module-level names
below are this task's (`SPEC`), so the tiny task's code reads as before.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from levelfield.rules.loader import Task

TASK_ID = "ctr-dlrm"
# dlrm-small's own widths: rules 1.0's ctr-dlrm has no model.architecture, so they live here.
EMBEDDING_DIM = 16  # width of every embedding table = width of the bottom MLP's output
BOTTOM_MLP = (64, 16)  # output widths; ReLU after every layer (DLRM's bottom MLP)
TOP_MLP = (64, 1)  # output widths; ReLU after every layer but the last (the logit)


def mlp_layers(prefix: str, in_features: int, widths: tuple[int, ...]) -> list[tuple[str, int, int]]:
    """(neutral prefix, in, out) of each dense layer of an MLP, e.g. ("bottom.dense0", 13, 64)."""
    layers = []
    for i, width in enumerate(widths):
        layers.append((f"{prefix}.dense{i}", in_features, width))
        in_features = width
    return layers


@dataclass(frozen=True)
class DLRMSpec:
    """One DLRM's shapes (dot interaction, as above); every derived shape follows from these six."""

    task_id: str
    dense_features: int
    cardinalities: tuple[int, ...]  # rows of each embedding table, one table per categorical field
    embedding_dim: int
    bottom_mlp: tuple[int, ...]
    top_mlp: tuple[int, ...]

    def __post_init__(self):
        if self.bottom_mlp[-1] != self.embedding_dim:
            raise ValueError(
                f"{self.task_id}: dot interactions need the bottom MLP's output width ({self.bottom_mlp[-1]}) "
                f"== the embedding width ({self.embedding_dim})"
            )

    @classmethod
    def from_task(cls, task: Task) -> DLRMSpec:
        """The spec of a task's rules: rows and dense features from dataset.params, widths from
        model.architecture (absent, as in ctr-dlrm's rules: dlrm-small's widths above)."""
        params = task.dataset["params"]
        arch = task.model.get("architecture", {})
        return cls(
            task_id=task.id,
            dense_features=int(params["dense_features"]),
            cardinalities=tuple(int(c) for c in params["cardinalities"]),
            embedding_dim=int(arch.get("embedding_dim", EMBEDDING_DIM)),
            bottom_mlp=tuple(int(w) for w in arch.get("bottom_mlp", BOTTOM_MLP)),
            top_mlp=tuple(int(w) for w in arch.get("top_mlp", TOP_MLP)),
        )

    def with_rows(self, max_rows: int) -> DLRMSpec:
        """The same network with every table capped at `max_rows` rows (tests: full tables do not fit CI)."""
        return replace(self, cardinalities=tuple(min(rows, max_rows) for rows in self.cardinalities))

    @property
    def num_fields(self) -> int:
        return len(self.cardinalities)

    @property
    def num_vectors(self) -> int:
        """Bottom-MLP output + one embedding per field (9 for ctr-dlrm, 27 for MLPerf's DLRM)."""
        return self.num_fields + 1

    @functools.cached_property
    def interaction_pairs(self) -> tuple[tuple[int, int], ...]:
        """Distinct pairs (i, j), i < j, row-major over the upper triangle (36 for 9 vectors)."""
        return tuple((i, j) for i in range(self.num_vectors) for j in range(i + 1, self.num_vectors))

    @functools.cached_property
    def interaction_flat_index(self) -> np.ndarray:
        """The same pairs as flat indices into Z reshaped [B, V*V] (one gather instead of two), int32."""
        return np.array([i * self.num_vectors + j for i, j in self.interaction_pairs], dtype=np.int32)

    @property
    def top_input(self) -> int:
        return self.bottom_mlp[-1] + len(self.interaction_pairs)  # 16 + 36 = 52 for ctr-dlrm

    @property
    def bottom_layers(self) -> list[tuple[str, int, int]]:
        return mlp_layers("bottom", self.dense_features, self.bottom_mlp)

    @property
    def top_layers(self) -> list[tuple[str, int, int]]:
        return mlp_layers("top", self.top_input, self.top_mlp)

    @functools.cached_property
    def parameter_shapes(self) -> dict[str, tuple]:
        """Neutral name -> shape, in the order init_weights draws them (tables, bottom, top)."""
        shapes = {f"embedding{f}.table": (rows, self.embedding_dim) for f, rows in enumerate(self.cardinalities)}
        for name, fan_in, fan_out in self.bottom_layers + self.top_layers:
            shapes[f"{name}.kernel"] = (fan_in, fan_out)
            shapes[f"{name}.bias"] = (fan_out,)
        return shapes

    @property
    def trainable(self) -> tuple[str, ...]:
        return tuple(self.parameter_shapes)  # no buffers in this model

    def trainable_count(self) -> int:
        """Number of trainable scalars, from the shapes alone (nothing allocated)."""
        return sum(math.prod(shape) for shape in self.parameter_shapes.values())

    def init_weights(self, seed: int) -> dict[str, np.ndarray]:
        """Initial neutral weights, float32, drawn in parameter_shapes order from PCG64(seed).

        As the DLRM reference (facebookresearch/dlrm, dlrm_s_pytorch.py):
        embedding table of n rows: uniform(-sqrt(1/n), sqrt(1/n));
        dense kernel [in, out]: normal(0, sqrt(2 / (in + out)));
        dense bias [out]: normal(0, sqrt(1 / out)).
        Drawn in float64, then rounded to float32.
        """
        rng = np.random.Generator(np.random.PCG64(seed))
        weights = {}
        for name, shape in self.parameter_shapes.items():
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


@functools.lru_cache(maxsize=1)
def _task() -> Task:
    """ctr-dlrm's rules (the default rules version); imported lazily so `common/` has no import-time cycle."""
    from levelfield.rules import load_suite

    return load_suite().task(TASK_ID)


SPEC = DLRMSpec.from_task(_task())
CARDINALITIES: tuple[int, ...] = SPEC.cardinalities
DENSE_FEATURES: int = SPEC.dense_features
NUM_FIELDS = SPEC.num_fields
NUM_VECTORS = SPEC.num_vectors
INTERACTION_PAIRS: tuple[tuple[int, int], ...] = SPEC.interaction_pairs
INTERACTION_FLAT_INDEX = SPEC.interaction_flat_index
TOP_INPUT = SPEC.top_input
BOTTOM_LAYERS = SPEC.bottom_layers
TOP_LAYERS = SPEC.top_layers
# The model_spec names every task has (the harness and the tests read them here), its SPEC's own.
PARAMETER_SHAPES: dict[str, tuple] = SPEC.parameter_shapes
TRAINABLE: tuple[str, ...] = SPEC.trainable
trainable_count = SPEC.trainable_count  # the rules' model.parameters: 35,553
init_weights = SPEC.init_weights


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
