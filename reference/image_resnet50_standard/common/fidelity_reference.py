"""The fidelity gate's reference weights and outputs for image-resnet50-standard (rules 1.2), numpy only.

    from levelfield.reference.image_resnet50_standard.common.fidelity_reference import generate, reference
    weights = generate(task)                 # resnet50-fidelity-v1: 25.6 M float32, 847 s here (shared CPU)
    document = reference(task, weights, sha) # float64 top classes of the first 512 eval images

Or `levelfield fidelity weights|reference --task image-resnet50-standard`.

Generator `resnet50-fidelity-v1` (the rules' `inference.fidelity.weights`): an
untrained ResNet-50 whose outputs depend on its input, so that agreeing with
the reference says something about an implementation:

1. the task's initial weights of `seed` (He-normal convs, torch's uniform head);
2. every batch norm's scale drawn from U(0.6, 1.4) and bias from N(0, 0.2) (a
   second PCG64 stream of the seed), so an implementation that ignores them
   is caught;
3. data-dependent batch-norm statistics: the running mean and variance of
   every batch norm are its input's statistics on `calibration_samples`
   training images (centre crops), layer after layer in one float64 pass
   (numpy_forward.forward's `calibrate`), so every layer's pre-activations
   are centred and of unit variance on real inputs instead of dead or
   exploding;
4. the head built from the same images' pooled features: each class's kernel
   a random combination (N(0, 1) coefficients from the second stream) of the
   calibration images' feature deviations from their mean, its bias centring
   the class's logit, its scale making that logit's standard deviation 1
   over the calibration batch. No class wins for every input, the top class
   spreads over many classes, and the head reads only the directions in which
   the features vary from image to image: a random head over all 2,048
   features would also read the directions in which they only carry rounding
   noise, and bf16's noise would then be of the size of the differences
   between classes (bf16 logits 0.4 from the float64 network at the test's
   reduced size, against 0.18 with this head).

Every data-dependent number is rounded to 16 significant bits (`coarse`)
before it is used or stored, so the float64 sums of another BLAS, which differ
in the last bits, give bit-identical weights; the rules pin their SHA-256.

`reference(task, weights)` runs numpy_forward's float64 network on the first
`samples` eval images (the inputs LoadGen's accuracy run gets) and lists, per
image, every class within `max_gap` of the top logit with its gap (the gate's
tie tolerance reads them: levelfield/ground/fidelity.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from levelfield.ground.fidelity import FORMAT, classes_within, coarse, spread, variation_head, weights_params
from levelfield.reference.image_resnet50_standard.common.model_spec import BN_BUFFERS, ResNetSpec
from levelfield.reference.image_resnet50_standard.common.numpy_forward import forward

if TYPE_CHECKING:
    from levelfield.rules.loader import Task

GENERATOR = "resnet50-fidelity-v1"
SCALE_RANGE = (0.6, 1.4)  # batch-norm scale ~ U(0.6, 1.4)
BIAS_STD = 0.2  # batch-norm bias ~ N(0, 0.2)
GAP_DECIMALS = 4  # reference logit gaps, in units of a class's calibration standard deviation


def calibration_pixels(task: Task, samples: int) -> np.ndarray:
    """uint8 [samples, S, S, 3]: the centre crops of the task's first `samples` training images."""
    from levelfield.reference.datasets import load_dataset
    from levelfield.reference.image_resnet50_standard.common.inputs import centre_crop

    images = load_dataset(task)["train_images"][:samples]
    return np.ascontiguousarray(centre_crop(images, ResNetSpec.from_task(task).image_size))


def generate_for(spec: ResNetSpec, params: dict, pixels: np.ndarray) -> dict[str, np.ndarray]:
    """The generator on any spec and calibration batch (tests use a reduced network)."""
    weights = spec.init_weights(int(params["seed"]))
    rng = np.random.Generator(np.random.PCG64([int(params["seed"]), 1]))
    for name, shape in spec.parameter_shapes.items():
        prefix, part = name.rsplit(".", 1)
        if prefix == "head" or part in BN_BUFFERS or part == "kernel":
            continue
        value = rng.uniform(*SCALE_RANGE, size=shape) if part == "scale" else rng.normal(0.0, BIAS_STD, size=shape)
        weights[name] = value.astype(np.float32)
    # One float64 pass on the calibration batch sets every batch norm's statistics; the identity head makes
    # its output the pooled features.
    identity = {**weights, "head.kernel": np.eye(spec.features), "head.bias": np.zeros(spec.features)}
    stats: dict[str, np.ndarray] = {}
    features = forward(spec, identity, pixels, calibrate=stats, round_stat=coarse)
    weights.update({name: value.astype(np.float32) for name, value in stats.items()})
    weights["head.kernel"], weights["head.bias"] = variation_head(features, spec.num_classes, rng)
    return weights


def generate(task: Task) -> dict[str, np.ndarray]:
    """The reference weights of the task's rules (`inference.fidelity.weights`)."""
    params = weights_params(task, GENERATOR)
    pixels = calibration_pixels(task, int(params["calibration_samples"]))
    return generate_for(ResNetSpec.from_task(task), params, pixels)


def reference_logits(spec: ResNetSpec, weights: dict[str, np.ndarray], pixels: np.ndarray) -> np.ndarray:
    """float64 logits [N, classes] of uint8 centre crops."""
    return forward(spec, weights, pixels)


def document(task_id: str, logits: np.ndarray, max_gap: float, weights_sha256: str) -> dict:
    """The reference file's content for float64 logits [samples, classes]: one item per image."""
    return {
        "format": FORMAT,
        "task": task_id,
        "kind": "classes",
        "samples": int(len(logits)),
        "weights_sha256": weights_sha256,
        "max_gap": max_gap,
        "spread": spread(logits),
        "items": [[i, 0] for i in range(len(logits))],
        "candidates": classes_within(logits, max_gap, GAP_DECIMALS),
    }


def reference(task: Task, weights: dict[str, np.ndarray], weights_sha256: str) -> dict:
    """The reference outputs of `weights` on the first `inference.fidelity.samples` eval images."""
    from levelfield.reference.datasets import load_dataset
    from levelfield.reference.image_resnet50_standard.common.inputs import model_inputs

    fidelity = task.inference["fidelity"]
    pixels = model_inputs(load_dataset(task), "eval")["images"][: int(fidelity["samples"])]
    logits = reference_logits(ResNetSpec.from_task(task), weights, pixels)
    return document(task.id, logits, float(fidelity["reference"]["max_gap"]), weights_sha256)
