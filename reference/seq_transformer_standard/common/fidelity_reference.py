"""The fidelity gate's reference weights and outputs for seq-transformer-standard (rules 1.2), numpy only.

    from levelfield.reference.seq_transformer_standard.common.fidelity_reference import generate, reference
    weights = generate(task)                 # encoder-fidelity-v1: 132 M float32, 1,058 s here (shared CPU)
    document = reference(task, weights, sha) # float64 top tokens at every masked position of 128 sequences

Or `levelfield fidelity weights|reference --task seq-transformer-standard`.

Generator `encoder-fidelity-v1` (the rules' `inference.fidelity.weights`): an
untrained BERT-base-sized encoder whose masked-token predictions depend on the
context. The task's own initialisation (normal 0.02) leaves attention nearly
uniform and every residual branch a whisper beside the embeddings, so the
prediction at a masked position would be that of the mask token at that
position whatever its neighbours. Instead, from PCG64(seed):

1. embeddings N(0, 1); every dense kernel N(0, 1 / fan_in) (unit gain, so
   attention scores have unit spread and are far from uniform); biases
   N(0, 0.1); LayerNorm scales 1 + N(0, 0.1), biases N(0, 0.1);
2. data-dependent output scales: on `calibration_samples` training sequences,
   each residual branch's output projection (attention output, MLP dense2,
   kernel and bias) is scaled so that the branch's output has the standard
   deviation of the stream it is added to (layer after layer, in one float64
   pass: numpy_forward.encode's `calibrate`), so every layer moves the
   stream as much as everything before it, and skipping one shows;
3. the head built from the calibration batch's hidden states at its masked
   positions, as the image task's (ground/fidelity.py `variation_head`): each token's kernel a
   random combination of their deviations from their mean, scaled to unit
   logit spread over them, its bias centring the logit. No token wins at every
   position, the predictions spread over the vocabulary, and the head reads
   only the directions in which a masked position's state varies with its
   context, not those in which bf16 would only add rounding noise.

Every data-dependent number is rounded to 16 significant bits before use (`coarse`:
another BLAS gives bit-identical weights); the rules pin
their SHA-256.

`reference(task, weights, sha)` runs the float64 encoder on the first `samples`
eval sequences and, at every masked position (input token 0), lists every
token within `max_gap` of the top logit with its gap.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from levelfield.ground.fidelity import FORMAT, classes_within, coarse, spread, variation_head, weights_params
from levelfield.reference.seq_transformer.common.model_spec import TransformerSpec
from levelfield.reference.seq_transformer.common.numpy_forward import encode, head
from levelfield.reference.seq_transformer_standard.common.dataset import MASK_TOKEN

if TYPE_CHECKING:
    from levelfield.rules.loader import Task

GENERATOR = "encoder-fidelity-v1"
BIAS_STD = 0.1
GAP_DECIMALS = 4
BRANCH_GAIN = 1.0  # a residual branch's output std, relative to the stream it is added to
OUTPUT_PROJECTIONS = {"attention": "attention.output", "mlp": "mlp.dense2"}


def initial(spec: TransformerSpec, seed: int) -> dict[str, np.ndarray]:
    """Step 1: unit-gain weights drawn in parameter_shapes order."""
    rng = np.random.Generator(np.random.PCG64(seed))
    weights = {}
    for name, shape in spec.parameter_shapes.items():
        kind = name.rsplit(".", 1)[1]
        if kind == "embedding":
            value = rng.normal(0.0, 1.0, size=shape)
        elif kind == "kernel":
            value = rng.normal(0.0, 1.0 / math.sqrt(shape[0]), size=shape)
        elif kind == "scale":
            value = 1.0 + rng.normal(0.0, BIAS_STD, size=shape)
        else:  # biases, LayerNorm biases
            value = rng.normal(0.0, BIAS_STD, size=shape)
        weights[name] = value.astype(np.float32)
    return weights


def generate_for(spec: TransformerSpec, params: dict, tokens: np.ndarray) -> dict[str, np.ndarray]:
    """The generator on any spec and calibration batch tokens int [n, L] (tests use a reduced network)."""
    weights = initial(spec, int(params["seed"]))

    def scale_branch(name: str, branch: np.ndarray, stream: np.ndarray) -> None:
        layer, kind = name.split(".")
        gain = float(coarse(BRANCH_GAIN * stream.std() / max(branch.std(), 1e-12)))
        for part in ("kernel", "bias"):
            key = f"{layer}.{OUTPUT_PROJECTIONS[kind]}.{part}"
            weights[key] = (weights[key].astype(np.float64) * gain).astype(np.float32)

    hidden = encode(spec, weights, tokens, calibrate=scale_branch)
    masked = hidden[np.asarray(tokens) == MASK_TOKEN]  # [masked positions, d]
    rng = np.random.Generator(np.random.PCG64([int(params["seed"]), 1]))
    weights["head.kernel"], weights["head.bias"] = variation_head(masked, spec.num_classes, rng)
    return weights


def calibration_tokens(task: Task, samples: int) -> np.ndarray:
    from levelfield.reference.datasets import load_dataset

    return np.asarray(load_dataset(task)["train_inputs"][:samples], np.int64)


def generate(task: Task) -> dict[str, np.ndarray]:
    """The reference weights of the task's rules (`inference.fidelity.weights`)."""
    params = weights_params(task, GENERATOR)
    tokens = calibration_tokens(task, int(params["calibration_samples"]))
    return generate_for(TransformerSpec.from_task(task), params, tokens)


def masked_positions(tokens: np.ndarray) -> np.ndarray:
    """int [items, 2]: (sequence, position) of every masked position, row-major."""
    return np.argwhere(np.asarray(tokens) == MASK_TOKEN)


def reference_logits(spec: TransformerSpec, weights: dict[str, np.ndarray], tokens: np.ndarray) -> np.ndarray:
    """float64 logits [items, classes] at the masked positions of tokens int [N, L], row-major."""
    out = []
    for start in range(0, len(tokens), 8):
        chunk = np.asarray(tokens[start : start + 8])
        hidden = encode(spec, weights, chunk)
        out.append(head(weights, hidden[chunk == MASK_TOKEN]))
    return np.concatenate(out)


def document(task_id: str, items: np.ndarray, logits: np.ndarray, samples: int, max_gap: float, sha: str) -> dict:
    return {
        "format": FORMAT,
        "task": task_id,
        "kind": "classes",
        "samples": int(samples),
        "weights_sha256": sha,
        "max_gap": max_gap,
        "spread": spread(logits),
        "items": [[int(s), int(p)] for s, p in items],
        "candidates": classes_within(logits, max_gap, GAP_DECIMALS),
    }


def reference(task: Task, weights: dict[str, np.ndarray], weights_sha256: str) -> dict:
    """The reference outputs of `weights` at the masked positions of the first `inference.fidelity.samples`
    eval sequences."""
    from levelfield.reference.datasets import load_dataset

    fidelity = task.inference["fidelity"]
    tokens = np.asarray(load_dataset(task)["eval_inputs"][: int(fidelity["samples"])], np.int64)
    logits = reference_logits(TransformerSpec.from_task(task), weights, tokens)
    max_gap = float(fidelity["reference"]["max_gap"])
    return document(task.id, masked_positions(tokens), logits, len(tokens), max_gap, weights_sha256)
