"""Generator `plaid-images-v1`: 1000-class RGB images with class-specific plaid patches (numpy only, bit-identical).

    from levelfield.reference.image_resnet50_standard.common.dataset import generate
    arrays = generate({"seed": 20261125, "image_size": 256, "patch_size": 160, "noise": 32,
                       "train_samples": 4096, "eval_samples": 1024})
    arrays["train_images"].shape     # (4096, 256, 256, 3) uint8, HWC, ImageNet-style stored size
    arrays["train_labels"].shape     # (4096,) uint16, class ids 0..999

Or through the rules: `levelfield.reference.datasets.load_dataset(task)`.

What a class is. Class c in [0, 1000) is three factors of ten: an orientation
(c // 100), a stripe period (c // 10 % 10) and a colour pair (c % 10). An image
of class c is a noisy background of one random grey level with, at a random
position, a square patch of `patch_size` pixels holding a plaid: two square-wave
gratings of the class's period, one along the orientation's direction (dx, dy)
and one along its mirror image (-dx, dy), XORed, each at a random phase, painted
in the class's two colours (a single grating for the horizontal and vertical
orientations, whose mirror image is their own line family). Then uniform noise in [-noise/2, noise/2) on every
pixel and channel, clipped to [0, 255].

Why it survives the augmentation a ResNet is trained with: a random 224 crop of a
256 image keeps at least 128 of the 160 patch pixels per side (and the centre
crop the eval uses as many), and a horizontal flip maps the plaid of (dx, dy) and
(-dx, dy) onto itself with other phases, which are random anyway, so flipping
never turns one class into another. Each factor is learnable from local texture
(colour: one pixel; period and orientation: a few stripes), and a class is their
combination, so a CNN learns the 1000 classes from a few images each by learning
30 factor values, the compositional structure that makes few-shot learning of
the label set possible.

Bit-identical on every machine: every value is integer arithmetic on PCG64 raw
words (levelfield.reference.synthetic); the period along a direction uses an
integer norm (math.isqrt), never a sine or square root of a float. Train and
eval come from separate sub-streams. 4096 + 1024 images take ~6 s on this CPU.
"""

from __future__ import annotations

import math

import numpy as np

from levelfield.reference.synthetic import RawStream

GENERATOR = "plaid-images-v1"
PARAMS = ("seed", "image_size", "patch_size", "noise", "train_samples", "eval_samples")
NUM_CLASSES = 1000  # 10 orientations x 10 periods x 10 colour pairs (ImageNet's class count)

# Orientation directions (dx, dy), dy >= 0: from horizontal stripes' normal (1, 0) round to (0, 1), so with
# their mirror images (-dx, dy) ten plaids that a horizontal flip maps onto themselves.
DIRECTIONS = ((1, 0), (5, 1), (3, 1), (2, 1), (3, 2), (1, 1), (2, 3), (1, 2), (1, 3), (0, 1))
# Half-periods in pixels measured along the direction (a stripe and a gap each this wide).
HALF_PERIODS = (2, 3, 4, 5, 6, 7, 9, 11, 13, 16)
# Colour pairs (RGB), far apart in colour and in brightness order, so either factor alone separates them.
PALETTES = (
    ((230, 40, 40), (20, 20, 120)),
    ((40, 200, 40), (120, 20, 20)),
    ((40, 60, 230), (230, 230, 40)),
    ((230, 230, 40), (40, 40, 40)),
    ((230, 40, 230), (40, 120, 40)),
    ((40, 230, 230), (120, 40, 120)),
    ((250, 250, 250), (10, 10, 10)),
    ((250, 140, 20), (20, 90, 160)),
    ((140, 80, 40), (200, 200, 160)),
    ((120, 120, 250), (60, 160, 60)),
)
_FIXED = 256  # projections are scaled by this over the direction's integer norm: stripes of the same width


def check_params(params: dict) -> None:
    missing = [p for p in PARAMS if p not in params]
    if missing:
        raise ValueError(f"{GENERATOR}: missing params {', '.join(missing)} (expected {', '.join(PARAMS)})")
    if not 8 <= params["image_size"] <= 1024:
        raise ValueError(f"{GENERATOR}: image_size must be in [8, 1024], got {params['image_size']}")
    if not 1 <= params["patch_size"] <= params["image_size"]:
        raise ValueError(
            f"{GENERATOR}: patch_size must be in [1, image_size {params['image_size']}], got {params['patch_size']}"
        )
    if not 0 <= params["noise"] <= 128:
        raise ValueError(f"{GENERATOR}: noise must be in [0, 128], got {params['noise']}")


def class_factors(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(orientation, period, palette) indices, each int64 in [0, 10), of class ids."""
    labels = np.asarray(labels, np.int64)
    return labels // 100, labels // 10 % 10, labels % 10


def _stripes(dx: np.ndarray, dy: np.ndarray, half: np.ndarray, phase: np.ndarray, size: int) -> np.ndarray:
    """bool [n, size, size]: ((dx * x + dy * y) * FIXED / norm + phase) // half is odd; integer math only."""
    # FIXED x |(dx, dy)|, rounded down: math.isqrt is exact on integers (no float square root).
    exact = np.array(
        [math.isqrt((int(a) ** 2 + int(b) ** 2) * _FIXED**2) for a, b in zip(dx, dy, strict=True)], np.int32
    )
    # int32: |dx|, dy <= 5 and x, y < 1024 keep (dx * x + dy * y) * FIXED^2 under 2^31.
    coords = np.arange(size, dtype=np.int32)
    dx, dy, half, phase = (np.asarray(v, np.int32) for v in (dx, dy, half, phase))
    t = (dx[:, None, None] * coords[None, None, :] + dy[:, None, None] * coords[None, :, None]) * _FIXED**2
    t = t // exact[:, None, None] + phase[:, None, None]  # pixels along the direction, floor division
    return (t // half[:, None, None]) % 2 == 1


def _images(draws: RawStream, labels: np.ndarray, params: dict) -> np.ndarray:
    size, patch, noise = params["image_size"], params["patch_size"], params["noise"]
    n = len(labels)
    out = np.empty((n, size, size, 3), np.uint8)
    # Per-image draws, each a fixed number of words per image, in this order for the whole split.
    grey = draws.integers(n, 256)
    top, left = draws.integers(n, size - patch + 1), draws.integers(n, size - patch + 1)
    orientation, period, palette = class_factors(labels)
    half = np.asarray(HALF_PERIODS, np.int64)[period]
    phase1, phase2 = draws.integers(n, 2**16) % (2 * half), draws.integers(n, 2**16) % (2 * half)
    dx = np.asarray(DIRECTIONS, np.int64)[orientation, 0]
    dy = np.asarray(DIRECTIONS, np.int64)[orientation, 1]
    colours = np.asarray(PALETTES, np.int64)[palette]  # [n, 2, 3]
    noise_of_byte = (np.arange(256, dtype=np.int16) * np.int16(noise) // np.int16(256) - np.int16(noise // 2)).astype(
        np.int16
    )  # < 2^15: noise <= 128
    chunk = 64  # images per pass: bounds the int64 temporaries (~200 MiB) whatever the split's size
    for start in range(0, n, chunk):
        s = slice(start, min(n, start + chunk))
        # The mirror grating where it is another line family; for (1, 0) and (0, 1) it is the same family, and
        # XORing two gratings of one family at random phases could cancel them into a flat patch.
        oblique = (dx[s] * dy[s] != 0)[:, None, None]
        mirror = _stripes(-dx[s], dy[s], half[s], phase2[s], patch) & oblique
        plaid = _stripes(dx[s], dy[s], half[s], phase1[s], patch) ^ mirror
        # int16 from here: grey + noise stays within [-64, 320] before the clip.
        picture = np.broadcast_to(grey[s, None, None, None].astype(np.int16), (s.stop - s.start, size, size, 3)).copy()
        painted = np.where(plaid[..., None], colours[s, None, None, 1], colours[s, None, None, 0]).astype(np.int16)
        for k, i in enumerate(range(s.start, s.stop)):
            picture[k, top[i] : top[i] + patch, left[i] : left[i] + patch] = painted[k]
        # Noise: one byte of a raw word per value, read little-endian so the bytes are the same everywhere.
        count = picture.size
        words = draws.raw((count + 7) // 8).astype("<u8")
        # byte b -> b * noise // 256 - noise // 2, by table: one gather instead of four passes over the batch.
        picture += noise_of_byte[words.view(np.uint8)[:count].reshape(picture.shape)]
        np.clip(picture, 0, 255, out=picture)
        out[s] = picture
    return out


def _split(params: dict, stream: int, samples: int) -> tuple[np.ndarray, np.ndarray]:
    draws = RawStream(params["seed"], stream)
    labels = draws.integers(samples, NUM_CLASSES)
    return _images(draws, labels, params), labels.astype(np.uint16)


def generate(params: dict) -> dict[str, np.ndarray]:
    """The four arrays train_images, train_labels, eval_images, eval_labels (uint8 NHWC images, uint16 labels)."""
    check_params(params)
    train_images, train_labels = _split(params, RawStream.TRAIN, params["train_samples"])
    eval_images, eval_labels = _split(params, RawStream.EVAL, params["eval_samples"])
    return {
        "train_images": train_images,
        "train_labels": train_labels,
        "eval_images": eval_images,
        "eval_labels": eval_labels,
    }
