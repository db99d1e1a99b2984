"""markov-mlm-v1, seq-transformer-standard's generator: the structure it promises, on a small draw; and the
task's metric, token_accuracy.

Its bytes at the rules' sizes are pinned by the rules' SHA-256 (tests/test_datasets_generated.py
recomputes every generated task's digest); here: every target follows the successor table, masked
inputs are exactly the mask token, the mask rate is the rules', and bad params fail in one line.
"""

from __future__ import annotations

import numpy as np
import pytest

from levelfield.reference.seq_transformer_standard.common import metric
from levelfield.reference.seq_transformer_standard.common.dataset import (
    MASK_TOKEN,
    generate,
    successor_table,
)

PARAMS = {"seed": 7, "vocab_size": 300, "seq_len": 64, "successors": 4, "mask_percent": 15,
          "train_samples": 512, "eval_samples": 64}  # fmt: skip


@pytest.fixture(scope="module")
def arrays():
    return generate(PARAMS)


def test_every_target_token_is_one_of_its_predecessor_s_successors(arrays):
    table = successor_table(PARAMS["seed"], PARAMS["vocab_size"], PARAMS["successors"])
    targets = arrays["train_targets"].astype(np.int64)
    follows = np.any(table[targets[:, :-1]] == targets[:, 1:, None], axis=-1)
    assert follows.all() and targets.min() >= 1 and targets.max() < PARAMS["vocab_size"]
    # Not degenerate: the first successor is taken about 8/15 of the time, not always.
    first = np.mean(table[targets[:, :-1], 0] == targets[:, 1:])
    assert 0.45 < first < 0.62, first


def test_masked_positions_are_the_mask_token_and_the_rest_are_the_target(arrays):
    for split in ("train", "eval"):
        inputs, targets = arrays[f"{split}_inputs"], arrays[f"{split}_targets"]
        assert inputs.dtype == targets.dtype == np.uint16 and inputs.shape == targets.shape
        masked = inputs == MASK_TOKEN
        np.testing.assert_array_equal(inputs[~masked], targets[~masked])
        assert 0.13 < masked.mean() < 0.17, (split, masked.mean())


def test_the_same_params_give_the_same_bytes_and_eval_does_not_move_with_train(arrays):
    again = generate(PARAMS)
    assert all(np.array_equal(again[name], arrays[name]) for name in arrays)
    fewer = generate({**PARAMS, "train_samples": 256})  # eval has its own sub-stream
    np.testing.assert_array_equal(fewer["eval_inputs"], arrays["eval_inputs"])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"vocab_size": 70000}, "vocab_size must be in \\[3, 65536\\] \\(uint16 tokens\\), got 70000"),
        ({"mask_percent": 101}, "mask_percent must be in \\[0, 100\\], got 101"),
        ({"successors": 0}, "successors must be in \\[1, 16\\], got 0"),
    ],
)
def test_bad_params_are_refused_naming_the_value(change, message):
    with pytest.raises(ValueError, match=f"markov-mlm-v1: {message}"):
        generate({**PARAMS, **change})


def test_token_accuracy_hand_computed_from_ids_and_from_logits():
    labels = np.array([[5, 6, 7, 8], [1, 2, 3, 4]])
    ids = np.array([[5, 6, 0, 8], [1, 2, 3, 4]], dtype=np.int32)  # 7 of 8 positions right
    assert metric.score(ids, labels) == 7 / 8
    logits = np.zeros((2, 4, 300), np.float32)
    logits[np.arange(2)[:, None], np.arange(4)[None], ids] = 1.0
    assert metric.score(logits, labels) == 7 / 8
    assert metric.score(np.zeros((2, 4), np.float32), labels) == 0.0  # the harness-only model's zeros


def test_token_accuracy_refuses_fractional_outputs_and_mismatched_shapes():
    labels = np.zeros((2, 4), np.int64)
    with pytest.raises(ValueError, match="token_accuracy: outputs must be token ids"):
        metric.score(np.full((2, 4), 0.5, np.float32), labels)
    with pytest.raises(ValueError, match=r"token_accuracy: predictions \(2, 3\) do not match labels \(2, 4\)"):
        metric.score(np.zeros((2, 3), np.int32), labels)
