"""ctr-dlrm-standard in PyTorch: ctr-dlrm's implementation at MLPerf DLRM's shapes, with plain SGD.

Called as every implementation is (reference/interface.py); predict answers float32 logits [N].

Everything but the shapes and the optimizer is ctr-dlrm's (reference/ctr_dlrm/
pytorch/implementation.py): the loss under torch.compile, predict in padded
power-of-two chunks. The optimizer is torch.optim.SGD without momentum or
decay (MLPerf DLRM v1's reference recipe) on sparse table gradients, so each
step writes only the looked-up rows of the 1.07 GiB of tables.

Several processes (`levelfield train --nproc N`) on a CPU: DDP all-reduces the
tables' sparse gradients as sparse tensors (gloo's sparse all-reduce: the
looked-up rows, never the whole tables) and the MLPs' dense ones as usual, so
every rank applies the global batch's mean gradient. Not on CUDA: NCCL has no
sparse all-reduce, and the idioms there (dense table gradients, or tables
split over the GPUs as TorchRec's model parallelism) are not implemented.
"""

from __future__ import annotations

import torch

from levelfield.reference.ctr_dlrm.pytorch.implementation import Implementation as SmallImplementation
from levelfield.reference.ctr_dlrm_standard.common.model_spec import IMPLEMENTS, SPEC
from levelfield.reference.interface import Recipe


class Implementation(SmallImplementation):
    task_id = "ctr-dlrm-standard"
    # bf16 too, for inference (rules 1.2): torch.autocast, in the tiny task's predict and forward.
    precisions = ("fp32", "bf16")
    implements = IMPLEMENTS
    multiprocess_devices = ("cpu",)  # gloo's sparse all-reduce; NCCL has none (see above)
    spec = SPEC
    sparse_embeddings = True

    def _build_optimizer(self, recipe: Recipe) -> torch.optim.Optimizer:
        # torch's SGD: p -= lr * g; sparse gradients take its per-tensor path (fused/foreach need dense ones).
        return torch.optim.SGD(self.model.parameters(), lr=recipe.learning_rate, momentum=0.0)

    def optimizer_hyperparameters(self) -> dict:
        group = self.optimizer.param_groups[0]
        return {"momentum": group["momentum"], "nesterov": group["nesterov"]}
