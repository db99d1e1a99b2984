"""dlrm-mlperf as a torch.nn.Module: ctr-dlrm's DLRMSmall at this task's shapes (common/model_spec.py).

    model = DLRMStandard()               # 286,313,473 parameters (1.07 GiB)
    logits = model(dense, sparse)        # float32 [B, 13], int32/int64 [B, 26] -> float32 [B]

The tables' gradients are sparse (`nn.Embedding(sparse=True)`): plain SGD then
updates only the rows a batch looks up, DLRM's own idiom; the numbers are
those of a dense zero gradient for the other rows.
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.common.model_spec import DLRMSpec
from levelfield.reference.ctr_dlrm.pytorch.model import DLRMSmall
from levelfield.reference.ctr_dlrm_standard.common.model_spec import SPEC


def DLRMStandard(shapes: DLRMSpec = SPEC, sparse_embeddings: bool = True) -> DLRMSmall:
    """The network at `shapes` (default: this task's; tests pass SPEC.with_rows(n))."""
    return DLRMSmall(shapes, sparse_embeddings)
