"""Generator `markov-mlm-v1`: masked-token sequences from a seeded sparse Markov source (numpy only, bit-identical).

    from levelfield.reference.seq_transformer_standard.common.dataset import generate
    arrays = generate({"seed": 20261125, "vocab_size": 30522, "seq_len": 128, "successors": 4,
                       "mask_percent": 15, "train_samples": 65536, "eval_samples": 8192})
    arrays["train_inputs"].shape     # (65536, 128) uint16, 15% of positions the mask token 0
    arrays["train_targets"].shape    # (65536, 128) uint16, the unmasked sequence

Or through the rules: `levelfield.reference.datasets.load_dataset(task)`.

The source is a first-order Markov chain over tokens 1..vocab_size-1 (token 0
is the mask, as BERT's [MASK]; the source never emits it): each token has
`successors` fixed next tokens, drawn once from the seed's EFFECTS sub-stream,
taken with probabilities 8:4:2:1 (for 4 successors; weight 2^(k-1-i) for the
i-th of k). A sequence starts at a uniform token and follows the chain. Then
each position is masked independently with probability mask_percent / 100
(all masked positions become token 0: BERT's 80/10/10 mask/random/keep split
is not used). So a masked token is predictable from its neighbours (its left
neighbour names 4 candidates, its right neighbour narrows them), the
structure a masked-language model learns, and an unmasked token is its own
target. Train and eval come from separate sub-streams, as sort-digits-v1's.
Every draw is integer arithmetic on PCG64 words (levelfield.reference.synthetic),
so the bytes are the same on every machine. 2^16 x 128 tokens take about 1 s.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.synthetic import RawStream

GENERATOR = "markov-mlm-v1"
PARAMS = ("seed", "vocab_size", "seq_len", "successors", "mask_percent", "train_samples", "eval_samples")
MASK_TOKEN = 0  # the input token of a masked position; never a target


def check_params(params: dict) -> None:
    missing = [p for p in PARAMS if p not in params]
    if missing:
        raise ValueError(f"{GENERATOR}: missing params {', '.join(missing)} (expected {', '.join(PARAMS)})")
    if not 3 <= params["vocab_size"] <= 2**16:
        raise ValueError(f"{GENERATOR}: vocab_size must be in [3, 65536] (uint16 tokens), got {params['vocab_size']}")
    if not 1 <= params["successors"] <= 16:
        raise ValueError(f"{GENERATOR}: successors must be in [1, 16], got {params['successors']}")
    if not 0 <= params["mask_percent"] <= 100:
        raise ValueError(f"{GENERATOR}: mask_percent must be in [0, 100], got {params['mask_percent']}")


def successor_table(seed: int, vocab_size: int, successors: int) -> np.ndarray:
    """int64 [vocab_size, successors]: the next tokens of each token (row 0, the mask, is never used)."""
    return (
        RawStream(seed, RawStream.EFFECTS)
        .integers(vocab_size * successors, vocab_size - 1)
        .reshape(vocab_size, successors)
        + 1
    )


def successor_weights(successors: int) -> np.ndarray:
    """int64 [successors]: 2^(k-1-i), so each successor is twice as likely as the next (8:4:2:1 for 4)."""
    return 2 ** np.arange(successors - 1, -1, -1, dtype=np.int64)


def _split(params: dict, stream: int, samples: int, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    seq_len, vocab = params["seq_len"], params["vocab_size"]
    draws = RawStream(params["seed"], stream)
    targets = np.empty((samples, seq_len), dtype=np.int64)
    targets[:, 0] = draws.integers(samples, vocab - 1) + 1
    # Successor choices, row-major over (sample, position 1..seq_len-1).
    choice = draws.categorical(samples * (seq_len - 1), successor_weights(table.shape[1])).reshape(samples, -1)
    for j in range(1, seq_len):
        targets[:, j] = table[targets[:, j - 1], choice[:, j - 1]]
    masked = draws.integers(samples * seq_len, 100).reshape(samples, seq_len) < params["mask_percent"]
    inputs = np.where(masked, MASK_TOKEN, targets)
    return inputs.astype(np.uint16), targets.astype(np.uint16)


def generate(params: dict) -> dict[str, np.ndarray]:
    """The four arrays train_inputs, train_targets, eval_inputs, eval_targets (uint16, (n, seq_len))."""
    check_params(params)
    table = successor_table(params["seed"], params["vocab_size"], params["successors"])
    train_inputs, train_targets = _split(params, RawStream.TRAIN, params["train_samples"], table)
    eval_inputs, eval_targets = _split(params, RawStream.EVAL, params["eval_samples"], table)
    return {
        "train_inputs": train_inputs,
        "train_targets": train_targets,
        "eval_inputs": eval_inputs,
        "eval_targets": eval_targets,
    }
