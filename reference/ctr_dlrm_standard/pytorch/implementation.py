"""ctr-dlrm-standard in PyTorch: ctr-dlrm's implementation at MLPerf DLRM's shapes, with plain SGD.

    impl = Implementation(Recipe.from_task(task))          # mode="compiled" (default) or "eager"
    impl.load(init_weights(seed))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_order(...), learning_rates(...))
    logits = impl.predict(model_inputs(arrays, "eval"))    # float32 [N]

Everything but the shapes and the optimizer is ctr-dlrm's (reference/ctr_dlrm/
pytorch/implementation.py): the loss under torch.compile, predict in padded
power-of-two chunks. The optimizer is torch.optim.SGD without momentum or
decay (MLPerf DLRM v1's reference recipe) on sparse table gradients, so each
step writes only the looked-up rows of the 1.07 GiB of tables. One process
only: sparse gradients under DDP are not tried here.
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
    multiprocess_devices = ()  # one process: see above
    spec = SPEC
    sparse_embeddings = True

    def _build_optimizer(self, recipe: Recipe) -> torch.optim.Optimizer:
        # torch's SGD: p -= lr * g; sparse gradients take its per-tensor path (fused/foreach need dense ones).
        return torch.optim.SGD(self.model.parameters(), lr=recipe.learning_rate, momentum=0.0)

    def optimizer_hyperparameters(self) -> dict:
        group = self.optimizer.param_groups[0]
        return {"momentum": group["momentum"], "nesterov": group["nesterov"]}
