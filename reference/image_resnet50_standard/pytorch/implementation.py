"""image-resnet50-standard in PyTorch: fmnist-resnet's implementation at ResNet-50's sizes, fed by a DataLoader.

    impl = Implementation(Recipe.from_task(task))           # mode="eager": no torch.compile
    impl.load(init_weights(0))
    impl.set_train_data(model_inputs(arrays, "train"), labels(arrays, "train"))   # uint8 [N, 256, 256, 3]
    losses = impl.train_steps(batch_indices, learning_rates)
    logits = impl.predict(model_inputs(arrays, "eval"))     # uint8 centre crops -> float32 [N, 1000]

Everything is fmnist-resnet's (reference/fmnist_resnet/pytorch/implementation.py),
whose `__init__` this class inherits: the model under torch.compile (forward
and backward), torch's fused SGD outside it, the learning rate set per step,
DDP under torchrun, AMP for bf16 / fp16, the loss of a batch (`_batch_loss`).
What differs is in its hooks and the input side: the network
(`_build_model`: ResNet50 of a ResNetSpec), the loss (`_build_loss`:
cross-entropy with label smoothing 0.1, torch's `label_smoothing`), the
weights' layout (load, export), and the input pipeline, whose state (workers,
pipeline, step counter, normalisation constants) is all its `__init__` adds;
the shared step loop gets the pipeline's batches, and `_loss(batch)` moves
each to the device for `_batch_loss`.

The input pipeline runs inside train_steps, so inside the timed run as in
MLPerf: the training set stays uint8 on the host, and each step's batch is cut
(random crop 224 of 256, flip, normalise) by a torch DataLoader's worker
processes (reference/frameworks/pytorch/pipeline.py) while the model trains on the previous
ones. The crops and flips are common/augment.py's decisions for (step, row),
step counted from the last load(), so the three frameworks train on
bit-identical batches. predict normalises the uint8 centre crops per chunk.

Several processes (`levelfield train --nproc N`): each rank runs its own
input pipeline, on its own share of the host's CPUs, over the rows
`train_steps` hands it, its contiguous share of every global batch (rank r:
rows r*B/N to (r+1)*B/N - 1 of the one data order). Crops and flips are
decided per (step, row), so the N shares together are exactly the batch one
process would build, and the global batch stays the rules' B. Batch norm is
fmnist-resnet's: per process on a CPU, SyncBatchNorm (global) on CUDA.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from levelfield.reference import interface
from levelfield.reference.fmnist_resnet.pytorch.implementation import Implementation as SmallImplementation
from levelfield.reference.fmnist_resnet.pytorch.weights import export_neutral, load_neutral
from levelfield.reference.frameworks.pytorch.pipeline import Pipeline
from levelfield.reference.frameworks.pytorch.steps import ENOUGH_GRAPHS, run_steps
from levelfield.reference.image_resnet50_standard.common.augment import INV_STD, MEAN, input_workers, step_plans
from levelfield.reference.image_resnet50_standard.common.inputs import pad_rows, predict_chunks
from levelfield.reference.image_resnet50_standard.common.model_spec import IMPLEMENTS, SPEC, ResNetSpec
from levelfield.reference.image_resnet50_standard.pytorch.model import ResNet50


class Implementation(SmallImplementation):
    task_id = "image-resnet50-standard"
    implements = IMPLEMENTS
    spec: ResNetSpec = SPEC  # the sizes (the equivalence tests set a reduced spec on a subclass)

    def __init__(self, recipe: interface.Recipe, *, mode: str = interface.COMPILED, device: str | None = None):
        super().__init__(recipe, mode=mode, device=device)
        self.input_workers = input_workers()  # the trainer logs it (levelfield_input_workers)
        self.pipeline = None
        self.step = 0  # optimizer steps since load(): the augmentation's counter (common/augment.py)
        self._mean = torch.from_numpy(MEAN).to(self.device)
        self._inv_std = torch.from_numpy(INV_STD).to(self.device)

    def _build_model(self, recipe: interface.Recipe) -> nn.Module:
        return ResNet50(self.spec)

    def _build_loss(self, recipe: interface.Recipe) -> nn.Module:
        return nn.CrossEntropyLoss(reduction="mean", label_smoothing=recipe.fixed["label_smoothing"])

    def load(self, weights: dict[str, np.ndarray]) -> None:
        load_neutral(self.model, weights, self.spec.parameter_shapes, self.task_id)  # fmnist-resnet's mapping
        self._new_optimizer()
        self.step = 0

    def export(self) -> dict[str, np.ndarray]:
        return export_neutral(self.model, self.spec.parameter_shapes)

    def _normalised_nchw(self, pixels: np.ndarray) -> torch.Tensor:
        """uint8 [N, H, W, 3] -> float32 [N, 3, H, W] on the device, (pixel - MEAN) * INV_STD."""
        x = torch.from_numpy(np.ascontiguousarray(pixels)).to(self.device)
        return ((x.float() - self._mean) * self._inv_std).permute(0, 3, 1, 2).contiguous()

    @ENOUGH_GRAPHS
    def predict(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits float32 [N, 1000] of uint8 centre crops, running BN statistics; chunks of at most 64 rows,
        each zero-padded to a power of two (common/inputs.py)."""
        images = inputs["images"]
        self.model.eval()
        outputs = []
        with torch.inference_mode(), self._autocast:
            for start, stop, size in predict_chunks(len(images)):
                x = self._normalised_nchw(pad_rows(images[start:stop], size))
                outputs.append(self._forward(x)[: stop - start])
            return torch.cat(outputs).float().cpu().numpy()

    def set_train_data(self, inputs: dict[str, np.ndarray], labels: np.ndarray) -> None:
        self.train_data = (inputs["images"], labels)  # uint8 [N, 256, 256, 3] on the host; the pipeline crops it
        self.pipeline = Pipeline(
            inputs["images"],
            labels,
            self.spec.image_size,
            self.input_workers,
            pin_memory=torch.device(self.device).type == "cuda",
        )

    def _loss(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Mean loss of one augmented batch from the pipeline (images NCHW, labels; on the host)."""
        x, y = batch
        return self._batch_loss(x.to(self.device), y.to(self.device))

    @ENOUGH_GRAPHS
    def train_steps(self, batch_indices: np.ndarray, learning_rates: np.ndarray) -> np.ndarray:
        if self.train_data is None:
            raise RuntimeError("set_train_data() must be called before train_steps()")
        plans = step_plans(self.step, batch_indices, self.train_data[0].shape[1], self.spec.image_size)
        # The DataLoader yields the batches of batch_indices in order, one per step.
        batches = self.pipeline.batches(batch_indices, plans)
        losses = run_steps(
            self._loss, self.model, self.optimizer, batch_indices, learning_rates, self.device, self.scaler, batches
        )
        self.step += len(batch_indices)
        return losses

    def hyperparameters(self) -> dict:
        values = super().hyperparameters()
        smoothing = self.criterion.label_smoothing
        is_xent = isinstance(self.criterion, nn.CrossEntropyLoss) and self.criterion.reduction == "mean"
        values["loss"] = "softmax_cross_entropy" if is_xent else repr(self.criterion)
        values["label_smoothing"] = smoothing
        return values
