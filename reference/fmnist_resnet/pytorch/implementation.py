"""fmnist-resnet in PyTorch: nn.Module + torch.optim.SGD, torch.compile'd model by default.

    from levelfield.reference.fmnist_resnet.pytorch.implementation import Implementation
    impl = Implementation(Recipe.from_task(task))           # mode="eager": no torch.compile
    impl.load(init_weights(0))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))
    losses = impl.train_steps(batch_indices, learning_rates)
    logits = impl.predict(model_inputs(arrays, "eval"))

Compiled mode compiles the model (forward and, through AOTAutograd, backward)
with fixed shapes, like torchvision's references with --compile; the loss and
torch's fused SGD step (one kernel per parameter, docs/fairness.md) stay
outside the compiled region. The learning rate of each step goes into
param_group["lr"], so it never causes a recompile.

Under torchrun (`levelfield train --nproc N`) training goes through
DistributedDataParallel: each rank gets its share of every global batch and
DDP averages the ranks' gradients, which is the gradient of the global mean
loss. predict always uses the bare model (no collectives: only rank 0 evaluates).
On CUDA BatchNorm becomes SyncBatchNorm (statistics of the global batch;
untested here, no GPU); PyTorch runs SyncBatchNorm on CUDA only, so on a CPU
each rank normalises over its own share (per-process statistics, as MLPerf's
ResNet allows; the rules list both spans and the log states model_bn_span).

Precision (rules 1.1: fp32, bf16, fp16) is PyTorch's AMP recipe: forward and
loss under `torch.autocast` (bfloat16 or float16 compute, float32 parameters),
and for fp16 a `torch.amp.GradScaler` around backward and the fused SGD step;
predict runs under the same autocast (reference/frameworks/pytorch/steps.py).

image-resnet50-standard subclasses this class and overrides only what
differs, through the hooks that `__init__` calls, as every implementation has
them (docs/architecture.md, "Interfaces"): `_build_model(recipe)`, the network
(here ResNetSmall), and `_build_loss(recipe)`, the criterion (here mean
cross-entropy); `_build_optimizer(recipe)` is the fused SGD. The rest of
`__init__` serves both: the device, SyncBatchNorm, autocast, DDP and
torch.compile; `_batch_loss(images, labels)` is the loss of one batch on the
device, whether gathered from the resident set (`_loss(rows)`, here) or cut by
an input pipeline (its `_loss(batch)`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from levelfield.reference import interface
from levelfield.reference.fmnist_resnet.common.inputs import pad_rows, predict_chunks
from levelfield.reference.fmnist_resnet.pytorch.model import ResNetSmall
from levelfield.reference.fmnist_resnet.pytorch.weights import export_neutral, load_neutral
from levelfield.reference.frameworks.pytorch.parallel import (
    data_parallel,
    distributed,
    peak_device_memory_mib,
    reset_peak_device_memory,
    torch_device,
)
from levelfield.reference.frameworks.pytorch.steps import (
    ENOUGH_GRAPHS,
    autocast,
    determinism_settings,
    grad_scaler,
    precision_in_use,
    run_steps,
)


class Implementation(interface.Implementation):
    task_id = "fmnist-resnet"
    framework = "pytorch"
    implements = {"optimizer": "sgd", "loss": "softmax_cross_entropy"}
    precisions = ("fp32", "bf16", "fp16")  # torch.autocast; fp16 with GradScaler (frameworks/pytorch/steps.py)
    multiprocess_devices = ("cpu", "cuda")
    # SyncBatchNorm exists for CUDA only: on a CPU each rank's BatchNorm sees its 1/N of the global batch.
    batch_norm_spans = {"cpu": "per_process", "cuda": "global"}

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        self.device = torch_device(device)
        reset_peak_device_memory(self.device)  # this run's peak, in a process that may have run others
        self.model = self._build_model(recipe).to(self.device)
        if distributed() and torch.device(self.device).type == "cuda":
            # Batch statistics of the global batch (all ranks), as one process computes them.
            self.model = nn.SyncBatchNorm.convert_sync_batchnorm(self.model)
        self.criterion = self._build_loss(recipe)
        # Training and predict run under the same precision (predict: what was trained is what is served).
        self._autocast = autocast(self.device, recipe.precision)
        # One compiled callable (and one for DDP's wrapper under torchrun); train / eval mode and each
        # padded predict size are separate graphs (dynamic=False: every shape is static, as the buckets
        # of predict_chunks intend).
        self.train_model = data_parallel(self.model, self.device)  # the model itself in one process
        if mode == interface.COMPILED:
            self._forward = torch.compile(self.model, dynamic=False)
            self._train_forward = (
                self._forward if self.train_model is self.model else torch.compile(self.train_model, dynamic=False)
            )
        else:
            self._forward, self._train_forward = self.model, self.train_model
        self.train_data = None  # (images, labels) on the device, from set_train_data
        self._new_optimizer()

    def _build_model(self, recipe: interface.Recipe) -> nn.Module:
        """The network, on the host (__init__ moves it to the device); image-resnet50-standard: its ResNet-50."""
        return ResNetSmall()

    def _build_loss(self, recipe: interface.Recipe) -> nn.Module:
        """The training loss, mean over the batch; image-resnet50-standard: with label smoothing."""
        return nn.CrossEntropyLoss(reduction="mean")

    def _build_optimizer(self, recipe: interface.Recipe) -> torch.optim.Optimizer:
        """The optimizer over the model's parameters, with fresh state."""
        fixed = recipe.fixed
        # torch's SGD: g += wd * p; buf = momentum * buf + g (buf = g at step 1); p -= lr * buf.
        return torch.optim.SGD(
            self.model.parameters(),
            lr=recipe.learning_rate,
            momentum=fixed["momentum"],
            nesterov=fixed["nesterov"],
            weight_decay=fixed["weight_decay"],
            dampening=0.0,
            fused=True,  # torch's fused kernel: the idiomatic fast form on CPU and CUDA (docs/fairness.md)
        )

    def _new_optimizer(self) -> None:
        """Fresh optimizer state (at __init__ and every load): a new optimizer and fp16's loss scale from its start."""
        self.scaler = grad_scaler(self.device, self.recipe.precision)
        self.optimizer = self._build_optimizer(self.recipe)

    def version(self) -> str:
        return torch.__version__

    def determinism_settings(self) -> dict:
        return determinism_settings(self.mode, self.device)

    def load(self, weights: dict[str, np.ndarray]) -> None:
        load_neutral(self.model, weights)
        self._new_optimizer()

    def export(self) -> dict[str, np.ndarray]:
        return export_neutral(self.model)

    @staticmethod
    def _nchw(images: np.ndarray) -> torch.Tensor:
        """float32 [N, 28, 28] -> [N, 1, 28, 28]."""
        return torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32)).unsqueeze(1)

    @ENOUGH_GRAPHS
    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 10] with running BN statistics, for any N >= 1.

        Rows go through in chunks of at most 1024, each zero-padded to the next
        power of two (common/inputs.py predict_chunks), so the compiled model
        sees at most 11 batch shapes; padded rows are sliced off.
        """
        images = inputs["images"]
        self.model.eval()
        outputs = []
        with torch.inference_mode(), self._autocast:
            for start, stop, size in predict_chunks(len(images)):
                x = self._nchw(pad_rows(images[start:stop], size)).to(self.device)
                outputs.append(self._forward(x)[: stop - start])
            return torch.cat(outputs).float().cpu().numpy()

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        self.train_data = (
            self._nchw(inputs["images"]).to(self.device),  # [N, 1, 28, 28]
            torch.from_numpy(np.asarray(labels, np.int64)).to(self.device),  # [N]
        )

    def _loss(self, rows: torch.Tensor) -> torch.Tensor:
        """Mean softmax cross-entropy of the training rows `rows` (int64 [B], on the device)."""
        images, labels = self.train_data
        return self._batch_loss(images[rows], labels[rows])

    def _batch_loss(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The criterion on the (compiled) model's logits of a batch on the device; under autocast (bf16,
        fp16) the loss is still float32 (cross_entropy is on autocast's float32 list)."""
        with self._autocast:
            return self.criterion(self._train_forward(images), labels)

    @ENOUGH_GRAPHS
    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        return run_steps(
            self._loss, self.model, self.optimizer, batch_indices, learning_rates, self.device, self.scaler
        )

    def peak_device_memory_mib(self) -> float | None:
        return peak_device_memory_mib(self.device)

    def hyperparameters(self) -> dict:
        group = self.optimizer.param_groups[0]
        return {
            **self.recipe.as_dict(),
            "optimizer": type(self.optimizer).__name__.lower(),
            "momentum": group["momentum"],
            "nesterov": group["nesterov"],
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
