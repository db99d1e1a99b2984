"""The PyTorch input pipeline of image-resnet50-standard: torch.utils.data.DataLoader with worker processes.

    pipeline = Pipeline(train_images, train_labels, crop=224, workers=2)   # uint8 NHWC, int64
    for x, y in pipeline.batches(batch_indices, plans):                     # float32 NCHW [B, 3, 224, 224], int64 [B]
        ...

As torchvision's references feed ImageNet: a map-style Dataset, a DataLoader
with `workers` processes that each build whole batches (crop, flip, uint8 ->
float32 normalisation, NHWC -> NCHW) and prefetch two each, persistent across
train_steps calls so workers start once per run (in the untimed warm-up). The
Dataset's "index" is one step's plan, (rows [B], decisions [B, 3]) from
common/augment.py, so a worker builds the batch the harness chose with the
crops and flips it drew. workers=0: the batches are built in the training
process, with no overlap. The training set is shared with the workers by fork
(copy-on-write, never copied).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from levelfield.reference.image_resnet50_standard.common.augment import INV_STD, MEAN


class StepBatches(torch.utils.data.Dataset):
    """dataset[(rows, plan)] -> (float32 [B, 3, crop, crop], int64 [B]): one step's augmented batch."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, crop: int):
        self.images = torch.from_numpy(images)  # uint8 [N, stored, stored, 3], shared, not copied
        self.labels = torch.from_numpy(np.asarray(labels, np.int64))
        self.crop = crop
        self.mean, self.inv_std = torch.from_numpy(MEAN), torch.from_numpy(INV_STD)

    def __getitem__(self, item: tuple[np.ndarray, np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        rows, plan = item
        c = self.crop
        crops = []
        for row, (top, left, flip) in zip(rows.tolist(), plan.tolist(), strict=True):
            image = self.images[row, top : top + c, left : left + c]  # [c, c, 3], a view
            crops.append(torch.flip(image, dims=(1,)) if flip else image)
        x = (torch.stack(crops).float() - self.mean) * self.inv_std  # [B, c, c, 3]
        return x.permute(0, 3, 1, 2).contiguous(), self.labels[torch.from_numpy(rows)]

    def __len__(self) -> int:  # a Sampler yields the plans; the DataLoader never asks, but a Dataset has one
        return 0


class _Plans(torch.utils.data.Sampler):
    """The current train_steps call's step plans, in order; set before each pass of the DataLoader."""

    def __init__(self):
        self.items: list[tuple[np.ndarray, np.ndarray]] = []

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


class Pipeline:
    def __init__(self, images: np.ndarray, labels: np.ndarray, crop: int, workers: int, pin_memory: bool = False):
        self.workers = workers
        self._plans = _Plans()
        self.loader = torch.utils.data.DataLoader(
            StepBatches(images, labels, crop),
            sampler=self._plans,
            batch_size=None,  # the dataset builds whole batches
            num_workers=workers,
            persistent_workers=workers > 0,
            prefetch_factor=2 if workers > 0 else None,
            pin_memory=pin_memory,
        )

    def batches(
        self, batch_indices: np.ndarray, plans: list[np.ndarray]
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """The augmented batches of the steps `batch_indices` [steps, B] under `plans` (one [B, 3] each)."""
        self._plans.items = [(np.asarray(r, np.int64), p) for r, p in zip(batch_indices, plans, strict=True)]
        return iter(self.loader)
