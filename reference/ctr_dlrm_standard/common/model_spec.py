"""dlrm-mlperf for ctr-dlrm-standard: MLPerf Training's DLRM, built from this task's rules.

    from levelfield.reference.ctr_dlrm_standard.common.model_spec import SPEC, init_weights
    SPEC.parameter_shapes["embedding0.table"]   # (262144, 128)
    weights = init_weights(seed=0)              # 286,313,473 float32 values: 1.07 GiB

The network is ctr-dlrm's (reference/ctr_dlrm/common/model_spec.py: bottom MLP,
one table per field, pairwise dots, top MLP), at the widths this task's rules
give in `model.architecture` and the table rows of `dataset.params.cardinalities`
(MLPerf's Criteo-1TB tables capped at 2^18 rows):

    bottom  dense [B, 13] -> 512 -> 256 -> 128 (ReLU)                        -> x [B, 128]
    embed   sparse [B, 26] -> one [rows_f, 128] table per field              -> e_f [B, 128]
    dots    T = [x, e_0..e_25] [B, 27, 128]; Z = T T^T; i < j                 -> [B, 351]
    top     [x, dots] [B, 479] -> 1024 -> 1024 -> 512 -> 256 -> 1 (ReLU but last) -> logit [B]

Neutral names and layouts are ctr-dlrm's (embedding{f}.table, {bottom,top}.dense{i}.{kernel,bias}).
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.common.model_spec import (  # noqa: F401 - part of this module's interface
    OUTPUT_SHAPE,
    RESPONSE_DTYPE,
    RESPONSE_SHAPE,
    DLRMSpec,
    to_response,
)
from levelfield.rules.loader import newest_task

TASK_ID = "ctr-dlrm-standard"

# The fixed recipe every framework's code implements (Implementation.implements): MLPerf DLRM v1's plain SGD.
IMPLEMENTS = {
    "optimizer": "sgd",
    "momentum": 0.0,
    "nesterov": False,
    "weight_decay": 0.0,
    "loss": "sigmoid_binary_cross_entropy",
}

SPEC = DLRMSpec.from_task(newest_task(TASK_ID))
# The model_spec names every task has (the harness and the tests read them here), its SPEC's own.
PARAMETER_SHAPES: dict[str, tuple] = SPEC.parameter_shapes
TRAINABLE: tuple[str, ...] = SPEC.trainable
trainable_count = SPEC.trainable_count  # the rules' model.parameters: 286,313,473
init_weights = SPEC.init_weights  # as ctr-dlrm's; ~10 s and 1.07 GiB at full size
