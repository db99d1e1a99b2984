"""Generator `ctr-synthetic-v1`: click logs with planted effects (numpy only, bit-identical).

    from levelfield.reference.ctr_dlrm.common.dataset import generate, generate_with_probabilities
    arrays = generate(task.dataset["params"])     # train_dense (n, 13) float32, train_sparse (n, 8) int32, ...
    extra = generate_with_probabilities(params)   # + train_click_probability / eval_click_probability

Or through the rules: `levelfield.reference.datasets.load_dataset(task)`.

One sample = `dense_features` floats uniform in [0, 1) and one categorical id
per field in [0, cardinality), drawn Zipf-like (rank k is k+1 times rarer than
rank 0, ranks mapped to ids by a random permutation per field). The click
score, in logit-like units, is

    z = BIAS
      + sum_f   category_weight[f][id_f]                       (one table per field)
      + sum_j   dense_weight[j] * (dense_j - 0.5)               (linear dense term)
      + sum_(f,g) interaction[f,g][id_f, id_g]                  (one table per interaction pair)

each table of `interaction` being a rank-`INTERACTION_RANK` product U V^T, the
kind of pairwise effect DLRM's embedding dot products can represent. The click
probability is p = 0.5 + 0.5 z / (1 + |z|) (no exp: see
`levelfield.reference.synthetic`) and label = 1 with probability p.

Sums run term by term in the fixed order above, elementwise, so the bytes do
not depend on the machine. The constants below are part of the generator's
definition: changing one changes every digest, and so needs a new generator name.
"""

from __future__ import annotations

import numpy as np

from levelfield.reference.synthetic import RawStream, rational_squash, zipf_weights

GENERATOR = "ctr-synthetic-v1"
PARAMS = ("seed", "dense_features", "cardinalities", "interaction_pairs", "train_samples", "eval_samples")

BIAS = -0.5  # below 0: fewer clicks than non-clicks, as in click logs
CATEGORY_SCALE = 1.2  # per-category weights uniform in [-1.2, 1.2)
DENSE_SCALE = 2.0  # dense weights uniform in [-2, 2), applied to (x - 0.5)
INTERACTION_SCALE = 2.0  # factors U, V uniform in [-1, 1), table = 2 * U V^T
INTERACTION_RANK = 2


def check_params(params: dict) -> None:
    missing = [p for p in PARAMS if p not in params]
    if missing:
        raise ValueError(f"{GENERATOR}: missing params {', '.join(missing)} (expected {', '.join(PARAMS)})")
    cards = params["cardinalities"]
    if not cards or any(not 1 <= c < 2**31 for c in cards):
        raise ValueError(f"{GENERATOR}: cardinalities must be in [1, 2**31) (int32 ids), got {cards}")
    for pair in params["interaction_pairs"]:
        if len(pair) != 2 or not all(0 <= f < len(cards) for f in pair) or pair[0] == pair[1]:
            raise ValueError(
                f"{GENERATOR}: interaction pair {pair} must name two different fields in [0, {len(cards)})"
            )


def planted_effects(params: dict) -> dict:
    """The hidden model that labels the data, drawn from the EFFECTS sub-stream in a fixed order."""
    check_params(params)
    stream = RawStream(params["seed"], RawStream.EFFECTS)
    cards = params["cardinalities"]
    permutations, category_weights = [], []
    for card in cards:
        permutations.append(stream.permutation(card))  # rank -> id, (card,)
        category_weights.append(stream.symmetric(card, CATEGORY_SCALE))  # by id, (card,)
    dense_weights = stream.symmetric(params["dense_features"], DENSE_SCALE)  # (dense_features,)
    interactions = []
    for f, g in params["interaction_pairs"]:
        u = stream.symmetric(cards[f] * INTERACTION_RANK, 1.0).reshape(cards[f], INTERACTION_RANK)
        v = stream.symmetric(cards[g] * INTERACTION_RANK, 1.0).reshape(cards[g], INTERACTION_RANK)
        table = np.zeros((cards[f], cards[g]))  # (card_f, card_g)
        for r in range(INTERACTION_RANK):  # no matmul: fixed association
            table += u[:, r, None] * v[None, :, r]
        interactions.append(((f, g), INTERACTION_SCALE * table))
    return {
        "permutations": permutations,
        "category_weights": category_weights,
        "dense_weights": dense_weights,
        "interactions": interactions,
    }


def click_probability(effects: dict, dense: np.ndarray, sparse: np.ndarray) -> np.ndarray:
    """True click probability p, float64 (n,), for dense (n, D) float32 and sparse (n, F) int ids."""
    z = np.full(dense.shape[0], BIAS)
    for f, weights in enumerate(effects["category_weights"]):
        z += weights[sparse[:, f]]
    for j, weight in enumerate(effects["dense_weights"]):
        z += weight * (dense[:, j].astype(np.float64) - 0.5)
    for (f, g), table in effects["interactions"]:
        z += table[sparse[:, f], sparse[:, g]]
    return rational_squash(z)


def _split(params: dict, effects: dict, stream_id: int, samples: int) -> dict[str, np.ndarray]:
    stream = RawStream(params["seed"], stream_id)
    dense = stream.uniform_float32(samples * params["dense_features"]).reshape(samples, -1)  # (n, D)
    sparse = np.empty((samples, len(params["cardinalities"])), dtype=np.int32)  # (n, F)
    for f, card in enumerate(params["cardinalities"]):
        ranks = stream.categorical(samples, zipf_weights(card))
        sparse[:, f] = effects["permutations"][f][ranks]
    p = click_probability(effects, dense, sparse)
    labels = (stream.uniform(samples) < p).astype(np.uint8)  # (n,)
    return {"dense": dense, "sparse": sparse, "labels": labels, "click_probability": p}


def generate_with_probabilities(params: dict) -> dict[str, np.ndarray]:
    """`generate` plus train_click_probability / eval_click_probability (float64, (n,)), the true p."""
    effects = planted_effects(params)
    out = {}
    for split, stream_id in (("train", RawStream.TRAIN), ("eval", RawStream.EVAL)):
        for name, array in _split(params, effects, stream_id, params[f"{split}_samples"]).items():
            out[f"{split}_{name}"] = array
    return out


def generate(params: dict) -> dict[str, np.ndarray]:
    """The six rules arrays: {train,eval}_{dense (n, D) float32, sparse (n, F) int32, labels (n,) uint8}."""
    arrays = generate_with_probabilities(params)
    return {
        name: arrays[name]
        for name in ("train_dense", "train_sparse", "train_labels", "eval_dense", "eval_sparse", "eval_labels")
    }
