"""dlrm-mlperf as a Keras 3 model: ctr-dlrm's DLRMSmall at this task's shapes (common/model_spec.py).

    model = build_model()                # 286,313,473 parameters (1.07 GiB)
    logits = model({"dense": dense, "sparse": sparse})   # float32 [B, 13], int32 [B, 26] -> float32 [B]

A Keras Embedding's gradient is a tf.IndexedSlices of the looked-up rows, which
plain SGD applies as a scatter to those rows only.
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.common.model_spec import DLRMSpec
from levelfield.reference.ctr_dlrm.tensorflow.model import DLRMSmall, layer_name  # noqa: F401
from levelfield.reference.ctr_dlrm.tensorflow.model import build_model as build_small
from levelfield.reference.ctr_dlrm_standard.common.model_spec import SPEC


def build_model(shapes: DLRMSpec = SPEC) -> DLRMSmall:
    """The network at `shapes` (default: this task's; tests pass SPEC.with_rows(n)), variables created."""
    return build_small(shapes)
