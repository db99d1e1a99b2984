"""ctr-dlrm in PyTorch: nn.Module + torch.optim.Adam, the forward and loss under torch.compile.

    impl = Implementation(Recipe.from_task(task))          # mode="compiled" (default) or "eager"
    impl.load(init_weights(seed))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_order(...), learning_rates(...))
    logits = impl.predict(model_inputs(arrays, "eval"))    # float32 [N]

Compiled mode compiles the loss of a batch (`_batch_loss`: forward + BCE;
AOTAutograd compiles its backward too) with static shapes, one graph per
training batch size, and a separate compiled forward for predict. `optimizer.step()` runs outside the
compiled region as torch's fused Adam (one C++/CUDA kernel per parameter;
measured 2-3x faster than the multi-tensor foreach form on this CPU,
docs/fairness.md): the LR is a Python float in param_groups, set before every
step, so a changing LR never recompiles anything.

Under torchrun (`levelfield train --nproc N`) training goes through
DistributedDataParallel: each rank gets its share of every global batch and
DDP averages the ranks' gradients, which is the gradient of the global mean
loss. predict always uses the bare model (no collectives: only rank 0 evaluates).

ctr-dlrm-standard subclasses this class with its own `spec` and the optimizer
its `_build_optimizer` hook builds (docs/architecture.md, "Interfaces").
"""

from __future__ import annotations

import numpy as np
import torch

from levelfield.reference.ctr_dlrm.common import model_spec
from levelfield.reference.ctr_dlrm.common.inputs import check_inputs, pad_rows, predict_chunks
from levelfield.reference.ctr_dlrm.pytorch import weights
from levelfield.reference.ctr_dlrm.pytorch.model import DLRMSmall
from levelfield.reference.frameworks.pytorch.base import FrameworkImplementation
from levelfield.reference.frameworks.pytorch.parallel import (
    data_parallel,
)
from levelfield.reference.frameworks.pytorch.steps import (
    autocast,
    mixed_only,
    precision_in_use,
)
from levelfield.reference.interface import COMPILED, Recipe


class Implementation(FrameworkImplementation):
    task_id = "ctr-dlrm"
    weight_mapping = weights
    implements = {"optimizer": "adam", "loss": "sigmoid_binary_cross_entropy"}  # precisions: fp32 only (the default)
    multiprocess_devices = ("cpu", "cuda")
    spec: model_spec.DLRMSpec = model_spec.SPEC  # the network's shapes (ctr-dlrm-standard: its own spec)
    sparse_embeddings = False  # Adam updates every row (see model.py); plain SGD need not

    def __init__(self, recipe: Recipe, *, mode: str = COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        self.model = self._build_model(recipe).to(self.device)
        self.train_model = data_parallel(self.model, self.device)  # the model itself in one process
        self.criterion = self._build_loss(recipe)
        # bf16 (ctr-dlrm-standard's inference, rules 1.2): the forward under torch.autocast, float32
        # parameters and tables (reference/frameworks/pytorch/steps.py); fp16's scale (the base's GradScaler)
        # never enabled.
        self._autocast = autocast(self.device, recipe.precision)
        self._new_optimizer()
        if mode == COMPILED:
            # Training: forward + loss as one graph, fixed batch shape, so static shapes (a new batch size
            # compiles once more).
            self._batch_loss = torch.compile(self._batch_loss, dynamic=False)
            # Predict: padded power-of-two buckets (common/inputs.py); dynamo's automatic
            # dynamic shapes then covers all buckets after the first recompile.
            self._forward = torch.compile(self.model)
        else:
            self._forward = self.model

    def _build_model(self, recipe: Recipe) -> torch.nn.Module:
        """The network at this task's spec, on the host (__init__ moves it to the device)."""
        return DLRMSmall(self.spec, self.sparse_embeddings)

    def _build_loss(self, recipe: Recipe) -> torch.nn.Module:
        """Mean sigmoid binary cross-entropy on logits."""
        return torch.nn.BCEWithLogitsLoss(reduction="mean")

    def _build_optimizer(self, recipe: Recipe) -> torch.optim.Optimizer:
        """The optimizer over the model's parameters, with fresh state; ctr-dlrm-standard: plain SGD."""
        fixed = recipe.fixed
        return torch.optim.Adam(
            self.model.parameters(),
            lr=recipe.learning_rate,
            betas=(fixed["beta1"], fixed["beta2"]),
            eps=fixed["epsilon"],
            weight_decay=fixed["weight_decay"],
            fused=True,  # torch's fused kernel: the idiomatic fast form on CPU and CUDA (docs/fairness.md)
        )

    # -- inference ----------------------------------------------------------------
    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N] for any N >= 1.

        Compiled mode cuts the request into chunks of at most MAX_PREDICT_BATCH
        rows and pads each to the next power of two (then slices), so LoadGen's
        varying query sizes reuse a handful of compiled shapes. Eager mode runs
        the exact shape.
        """
        n = check_inputs(inputs)
        self.model.eval()
        outputs = []
        with torch.inference_mode(), mixed_only(self._autocast):
            for start, stop, size in predict_chunks(n):
                if self.mode != COMPILED:
                    size = stop - start
                dense = torch.from_numpy(pad_rows(inputs["dense"][start:stop], size)).to(self.device)
                sparse = torch.from_numpy(pad_rows(inputs["sparse"][start:stop], size)).to(self.device)
                outputs.append(self._forward(dense, sparse)[: stop - start])
        return torch.cat(outputs).float().cpu().numpy()

    # -- training -----------------------------------------------------------------
    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        check_inputs(inputs)
        self.train_data = (  # (dense, sparse, labels) on the device
            torch.from_numpy(np.ascontiguousarray(inputs["dense"], np.float32)).to(self.device),
            torch.from_numpy(np.ascontiguousarray(inputs["sparse"], np.int32)).to(self.device),
            torch.from_numpy(np.asarray(labels, np.float32)).to(self.device),
        )

    def _loss(self, rows: torch.Tensor) -> torch.Tensor:
        """Mean loss of the training rows `rows` (int64 [B], on the device): gathered eagerly, then the
        (compiled) loss of the batch."""
        dense, sparse, labels = self.train_data
        return self._batch_loss(dense[rows], sparse[rows], labels[rows])

    def _batch_loss(self, dense: torch.Tensor, sparse: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean sigmoid binary cross-entropy of the logits [B] against float labels [B]; compiled mode compiles
        this method, forward and loss in one graph (__init__)."""
        with mixed_only(self._autocast):  # binary_cross_entropy_with_logits is on autocast's float32 list
            return self.criterion(self.train_model(dense, sparse), labels)

    def optimizer_hyperparameters(self) -> dict:
        """The optimizer's settings by rules name, read back from its param group."""
        group = self.optimizer.param_groups[0]
        return {"beta1": group["betas"][0], "beta2": group["betas"][1], "epsilon": group["eps"]}

    def hyperparameters(self) -> dict:
        group = self.optimizer.param_groups[0]
        return {
            **self.recipe.as_dict(),
            "optimizer": type(self.optimizer).__name__.lower(),
            **self.optimizer_hyperparameters(),
            "weight_decay": group["weight_decay"],
            "loss": (
                "sigmoid_binary_cross_entropy"
                if type(self.criterion) is torch.nn.BCEWithLogitsLoss and self.criterion.reduction == "mean"
                else repr(self.criterion)
            ),
            "precision": precision_in_use(self._autocast, self.model, self.scaler),
        }
