"""Dataset arrays -> model inputs and labels for image-resnet50-standard, numpy only.

    inputs = model_inputs(arrays, "train")   # {"images": uint8 [4096, 256, 256, 3]}: stored, cropped per step
    inputs = model_inputs(arrays, "eval")    # {"images": uint8 [1024, 224, 224, 3]}: the centre crops
    y = labels(arrays, "eval")               # int64 [1024]

Pixels stay uint8 until a framework's pipeline (training) or predict
(evaluation, LoadGen) turns them into normalised float32 (augment.normalise's
formula): a float32 copy of the training set would be 3.2 GB. Training images
keep their stored 256x256, since a new random crop is cut every epoch inside
the timed run (augment.py); evaluation images are centre-cropped here once, as
MLPerf Inference's ResNet preprocesses its images before the timed run.

predict requests are cut into chunks of at most MAX_PREDICT_BATCH = 64 rows,
each padded to the next power of two (reference/batching.py): 7 shapes.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference import batching
from levelfield.reference.batching import pad_rows  # noqa: F401 - part of this module's interface
from levelfield.reference.datasets import check_split

MAX_PREDICT_BATCH = 64  # rows per compiled predict call: a ResNet-50 batch of 64 at 224 holds ~1 GiB of activations


def centre_crop(images: np.ndarray, crop: int) -> np.ndarray:
    """The centre crop [N, crop, crop, 3] of images [N, stored, stored, 3] (offsets rounded down)."""
    stored = images.shape[1]
    start = (stored - crop) // 2
    return images[:, start : start + crop, start : start + crop]


def model_inputs(arrays: dict[str, np.ndarray], split: str) -> dict[str, np.ndarray]:
    """{"images": uint8}: the stored training images, or the eval images' centre crops (contiguous)."""
    check_split(split)
    images = arrays[f"{split}_images"]
    if split == "train":
        return {"images": images}
    from levelfield.reference.image_resnet50_standard.common.model_spec import SPEC

    return {"images": np.ascontiguousarray(centre_crop(images, SPEC.image_size))}


def labels(arrays: dict[str, np.ndarray], split: str) -> np.ndarray:
    """Class ids 0..999 as int64 [N]."""
    check_split(split)
    return arrays[f"{split}_labels"].astype(np.int64)


def predict_chunks(n: int) -> list[tuple[int, int, int]]:
    """(start, stop, padded size) of each chunk of a predict request of n rows (reference/batching.py)."""
    return batching.predict_chunks(n, MAX_PREDICT_BATCH)
