"""The fidelity gate's reference weights and outputs for ctr-dlrm-standard (rules 1.2), numpy only.

    from levelfield.reference.ctr_dlrm_standard.common.fidelity_reference import generate, reference
    weights = generate(task)                  # dlrm-fidelity-v1: 286 M float32 (1.07 GiB), 52 s here
    document = reference(task, weights, sha)  # float64 click probabilities of the first 16,384 eval rows

Or `levelfield fidelity weights|reference --task ctr-dlrm-standard`.

Generator `dlrm-fidelity-v1` (the rules' `inference.fidelity.weights`): an
untrained DLRM whose scores depend on every part of its input. The task's own
initialisation (DLRM's: table rows uniform within 1/sqrt(rows), 0.002 for a
2^18-row table) makes every dot product of two embeddings ~1e-5, so the score
would hardly depend on the categorical features at all. Instead, from
PCG64(seed):

1. every table row N(0, dim^-1/4) per element, so the dot of two rows has a
   standard deviation of 1, as large as the dense features' part;
2. every dense kernel N(0, 1 / fan_in), biases 0;
3. data-dependent scales, layer after layer in one float64 pass on
   `calibration_samples` training rows (numpy_forward.forward's `calibrate`):
   each unit of each dense layer is scaled and shifted so that its
   pre-activation has mean 0 and standard deviation 1 on those rows (ReLU
   layers: half the units fire on any input), the logit to mean 0 and
   standard deviation LOGIT_STD, so the click probabilities spread over
   (0, 1) instead of sitting at one value.

Every data-dependent number is rounded to 16 significant bits before use
(`coarse`: another BLAS gives bit-identical weights); the rules pin their SHA-256.

`reference(task, weights, sha)` runs the float64 network on the first `samples`
eval rows and keeps each row's click probability sigmoid(logit), rounded to
SCORE_DECIMALS (the gate's tolerances are far larger).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from levelfield.ground.fidelity import FORMAT, coarse, weights_params
from levelfield.reference.ctr_dlrm.common.model_spec import DLRMSpec
from levelfield.reference.ctr_dlrm.common.numpy_forward import forward

if TYPE_CHECKING:
    from levelfield.rules.loader import Task

GENERATOR = "dlrm-fidelity-v1"
LOGIT_STD = 1.5  # the logit's spread on the calibration rows: probabilities mostly within (0.05, 0.95)
SCORE_DECIMALS = 6


def initial(spec: DLRMSpec, seed: int) -> dict[str, np.ndarray]:
    """Steps 1 and 2, drawn in parameter_shapes order (a table at a time: 268 MiB of float64 at most)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    weights = {}
    for name, shape in spec.parameter_shapes.items():
        part = name.rsplit(".", 1)[1]
        if part == "table":
            value = rng.normal(0.0, spec.embedding_dim**-0.25, size=shape)
        elif part == "kernel":
            value = rng.normal(0.0, 1.0 / np.sqrt(shape[0]), size=shape)
        else:
            value = np.zeros(shape)
        weights[name] = value.astype(np.float32)
    return weights


def generate_for(spec: DLRMSpec, params: dict, dense: np.ndarray, sparse: np.ndarray) -> dict[str, np.ndarray]:
    """The generator on any spec and calibration rows (tests use tables capped at a few rows)."""
    weights = initial(spec, int(params["seed"]))
    last = spec.top_layers[-1][0]

    def standardise(name: str, x: np.ndarray) -> None:
        kernel = weights[f"{name}.kernel"].astype(np.float64)
        pre = x @ kernel  # the layer's pre-activation with a zero bias, [rows, out]
        target = LOGIT_STD if name == last else 1.0
        gain = coarse(target / np.maximum(pre.std(axis=0), 1e-12))
        weights[f"{name}.kernel"] = (kernel * gain).astype(np.float32)
        weights[f"{name}.bias"] = coarse(-pre.mean(axis=0) * gain).astype(np.float32)

    forward(spec, weights, dense, sparse, calibrate=standardise)
    return weights


def generate(task: Task) -> dict[str, np.ndarray]:
    """The reference weights of the task's rules (`inference.fidelity.weights`)."""
    from levelfield.reference.ctr_dlrm.common.inputs import model_inputs
    from levelfield.reference.datasets import load_dataset

    params = weights_params(task, GENERATOR)
    rows = int(params["calibration_samples"])
    inputs = model_inputs(load_dataset(task), "train")
    return generate_for(DLRMSpec.from_task(task), params, inputs["dense"][:rows], inputs["sparse"][:rows])


def probabilities(logits: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(logits, np.float64)))


def document(task_id: str, logits: np.ndarray, sha: str) -> dict:
    p = probabilities(logits)
    return {
        "format": FORMAT,
        "task": task_id,
        "kind": "scores",
        "samples": int(len(logits)),
        "weights_sha256": sha,
        "spread": {
            "samples": int(len(logits)),
            "logit_std": round(float(np.std(logits)), 4),
            "probability_std": round(float(np.std(p)), 4),
            "share_above_half": round(float(np.mean(p > 0.5)), 4),
        },
        "scores": [round(float(v), SCORE_DECIMALS) for v in p],
    }


def reference(task: Task, weights: dict[str, np.ndarray], weights_sha256: str) -> dict:
    """The reference click probabilities of `weights` on the first `inference.fidelity.samples` eval rows."""
    from levelfield.reference.ctr_dlrm.common.inputs import model_inputs
    from levelfield.reference.datasets import load_dataset

    n = int(task.inference["fidelity"]["samples"])
    inputs = model_inputs(load_dataset(task), "eval")
    logits = forward(DLRMSpec.from_task(task), weights, inputs["dense"][:n], inputs["sparse"][:n])
    return document(task.id, logits, weights_sha256)
