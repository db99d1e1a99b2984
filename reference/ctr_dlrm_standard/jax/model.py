"""dlrm-mlperf as a Flax linen module: ctr-dlrm's DLRMSmall at this task's shapes (common/model_spec.py).

model = DLRMStandard()               # 286,313,473 parameters (1.07 GiB)
logits = model.apply({"params": params}, dense, sparse)   # float32 [B, 13], int32 [B, 26] -> [B]
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.common.model_spec import DLRMSpec
from levelfield.reference.ctr_dlrm.jax.model import DLRMSmall, module_name  # noqa: F401
from levelfield.reference.ctr_dlrm_standard.common.model_spec import SPEC


def DLRMStandard(shapes: DLRMSpec = SPEC) -> DLRMSmall:
    """The network at `shapes` (default: this task's; tests pass SPEC.with_rows(n))."""
    return DLRMSmall(shapes)
