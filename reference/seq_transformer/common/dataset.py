"""Generator `sort-digits-v1`: sort a row of random digits (numpy only, bit-identical).

    from levelfield.reference.seq_transformer.common.dataset import generate
    arrays = generate({"seed": 20261122, "vocab_size": 10, "seq_len": 12,
                       "train_samples": 65536, "eval_samples": 8192})
    arrays["train_inputs"].shape     # (65536, 12) uint8

Or through the rules: `levelfield.reference.datasets.load_dataset(task)`.

inputs[i, j] is uniform in [0, vocab_size); targets[i] is inputs[i] sorted
ascending, so the model learns a per-position classification over the
vocabulary. Train and eval come from separate sub-streams (see
`levelfield.reference.synthetic`), so changing one split's size leaves the
other split's bytes unchanged.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.synthetic import RawStream

GENERATOR = "sort-digits-v1"
PARAMS = ("seed", "vocab_size", "seq_len", "train_samples", "eval_samples")


def check_params(params: dict) -> None:
    missing = [p for p in PARAMS if p not in params]
    if missing:
        raise ValueError(f"{GENERATOR}: missing params {', '.join(missing)} (expected {', '.join(PARAMS)})")
    if not 2 <= params["vocab_size"] <= 256:
        raise ValueError(f"{GENERATOR}: vocab_size must be in [2, 256] (uint8 tokens), got {params['vocab_size']}")


def _split(seed: int, stream: int, samples: int, seq_len: int, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    # One raw word per token, row-major: token (i, j) is word i * seq_len + j.
    digits = RawStream(seed, stream).integers(samples * seq_len, vocab_size)
    inputs = digits.astype(np.uint8).reshape(samples, seq_len)  # (samples, seq_len)
    targets = np.sort(inputs, axis=1)  # integer sort: exact
    return inputs, targets


def generate(params: dict) -> dict[str, np.ndarray]:
    """The four arrays train_inputs, train_targets, eval_inputs, eval_targets (uint8, (n, seq_len))."""
    check_params(params)
    seed, seq_len, vocab = params["seed"], params["seq_len"], params["vocab_size"]
    train_inputs, train_targets = _split(seed, RawStream.TRAIN, params["train_samples"], seq_len, vocab)
    eval_inputs, eval_targets = _split(seed, RawStream.EVAL, params["eval_samples"], seq_len, vocab)
    return {
        "train_inputs": train_inputs,
        "train_targets": train_targets,
        "eval_inputs": eval_inputs,
        "eval_targets": eval_targets,
    }
