"""seq-transformer in PyTorch: nn.TransformerEncoder + torch.optim.AdamW, torch.compile'd model by default.

    from levelfield.reference.seq_transformer.pytorch.implementation import Implementation
    impl = Implementation(Recipe.from_task(task))           # mode="eager": no torch.compile
    impl.load(init_weights(0))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_indices, learning_rates)
    logits = impl.predict(model_inputs(arrays, "eval"))     # float32 [N, 12, 10]

Compiled mode compiles the model (forward and, through AOTAutograd, backward)
with fixed shapes, like torchvision's references with --compile; the loss and
torch's fused AdamW step (one kernel per parameter, docs/fairness.md) stay
outside the compiled region. The learning rate of each step goes into
param_group["lr"], so it never causes a recompile. torch.optim.AdamW is the
definition the other frameworks match: p <- p - lr*wd*p, then p <- p - lr * m_hat / (sqrt(v_hat) + eps).

Under torchrun (`levelfield train --nproc N`) training goes through
DistributedDataParallel: each rank gets its share of every global batch and
DDP averages the ranks' gradients, which is the gradient of the global mean
loss. predict always uses the bare model (no collectives: only rank 0 evaluates).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from levelfield.reference import interface
from levelfield.reference.frameworks.pytorch.base import FrameworkImplementation
from levelfield.reference.frameworks.pytorch.parallel import (
    data_parallel,
)
from levelfield.reference.frameworks.pytorch.steps import (
    ENOUGH_GRAPHS,
    autocast,
    compiled_forwards,
    mixed_only,
    precision_in_use,
)
from levelfield.reference.seq_transformer.common import model_spec
from levelfield.reference.seq_transformer.common.inputs import MAX_PREDICT_BATCH, pad_rows, predict_chunks
from levelfield.reference.seq_transformer.pytorch import weights
from levelfield.reference.seq_transformer.pytorch.model import EncoderSmall


class Implementation(FrameworkImplementation):
    task_id = "seq-transformer"
    weight_mapping = weights
    implements = {"optimizer": "adamw", "loss": "softmax_cross_entropy"}  # precisions: fp32 only (the default)
    multiprocess_devices = ("cpu", "cuda")
    spec: model_spec.TransformerSpec = model_spec.SPEC  # the sizes (seq-transformer-standard: its own)
    # seq-transformer-standard sets these: a smaller predict chunk, and predict answering the argmax token
    # ids int32 [N, seq_len] instead of logits, which at BERT's vocabulary would be 15 MiB per row.
    max_predict_batch = MAX_PREDICT_BATCH
    predict_argmax = False

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        self.model = self._build_model(recipe).to(self.device)
        self.criterion = self._build_loss(recipe)
        # bf16 (seq-transformer-standard's inference, rules 1.2): PyTorch's AMP idiom, the forward under
        # torch.autocast, float32 parameters; training's forward runs under it too (reference/frameworks/
        # pytorch/steps.py). fp16's loss scale (the base's GradScaler) is never enabled: no task lets this
        # code run fp16.
        self._autocast = autocast(self.device, recipe.precision)
        self.train_model = data_parallel(self.model, self.device)  # the model itself in one process
        # One compiled callable (and one for DDP's wrapper under torchrun).
        self._forward, self._train_forward = compiled_forwards(self.model, self.train_model, mode == interface.COMPILED)
        self._new_optimizer()

    def _build_model(self, recipe: interface.Recipe) -> nn.Module:
        """The network at this task's spec, on the host (__init__ moves it to the device)."""
        return EncoderSmall(self.spec)

    def _build_loss(self, recipe: interface.Recipe) -> nn.Module:
        """Mean softmax cross-entropy over all B*12 positions (`_batch_loss` flattens them)."""
        return nn.CrossEntropyLoss(reduction="mean")

    def _build_optimizer(self, recipe: interface.Recipe) -> torch.optim.Optimizer:
        """The optimizer over the model's parameters, with fresh state."""
        fixed = recipe.fixed
        return torch.optim.AdamW(
            self.model.parameters(),
            lr=recipe.learning_rate,
            betas=(fixed["beta1"], fixed["beta2"]),
            eps=fixed["epsilon"],
            weight_decay=fixed["weight_decay"],
            amsgrad=False,
            fused=True,  # torch's fused kernel: the idiomatic fast form on CPU and CUDA (docs/fairness.md)
        )

    def _tokens(self, tokens: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(tokens, dtype=np.int64)).to(self.device)

    @ENOUGH_GRAPHS
    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 12, 10] for any N >= 1.

        Rows go through in chunks of at most 1024, each padded with token-0
        rows to the next power of two (common/inputs.py predict_chunks), so the
        compiled model sees at most 11 batch shapes; padded rows are sliced off.
        """
        tokens = inputs["tokens"]
        self.model.eval()
        outputs = []
        with torch.inference_mode(), mixed_only(self._autocast):
            for start, stop, size in predict_chunks(len(tokens), self.max_predict_batch):
                logits = self._forward(self._tokens(pad_rows(tokens[start:stop], size)))[: stop - start]
                outputs.append(logits.argmax(-1).to(torch.int32) if self.predict_argmax else logits)
            outputs = torch.cat(outputs)
            return (outputs if self.predict_argmax else outputs.float()).cpu().numpy()

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        self.train_data = (  # (tokens, labels) on the device
            self._tokens(inputs["tokens"]),  # int64 [N, 12]
            torch.from_numpy(np.asarray(labels, np.int64)).to(self.device),  # int64 [N, 12]
        )

    def _loss(self, rows: torch.Tensor) -> torch.Tensor:
        """Mean softmax cross-entropy of the training rows `rows` (int64 [B], on the device)."""
        tokens, labels = self.train_data
        return self._batch_loss(tokens[rows], labels[rows])

    def _batch_loss(self, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The criterion over all B*12 positions of the (compiled) model's logits of a batch on the device."""
        with mixed_only(self._autocast):  # cross_entropy is on autocast's float32 list: the loss is float32
            logits = self._train_forward(tokens)  # [B, 12, 10]
            return self.criterion(logits.reshape(-1, self.spec.num_classes), labels.reshape(-1))

    def hyperparameters(self) -> dict:
        group = self.optimizer.param_groups[0]
        return {
            **self.recipe.as_dict(),
            "optimizer": type(self.optimizer).__name__.lower(),
            "beta1": group["betas"][0],
            "beta2": group["betas"][1],
            "epsilon": group["eps"],
            "weight_decay": group["weight_decay"],
            "loss": (
                "softmax_cross_entropy"
                if isinstance(self.criterion, nn.CrossEntropyLoss)
                and self.criterion.reduction == "mean"
                and self.criterion.label_smoothing == 0.0
                else repr(self.criterion)
            ),
            "precision": precision_in_use(self._autocast, self.model, self.scaler),
        }
