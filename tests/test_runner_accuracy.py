"""The accuracy path: per-task response rows, the hostile-input accuracy-log reader, and the acceptance
check that a checkpoint's accuracy measured through the runner equals the trainer's eval accuracy.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import default_rules_version, infer_options
from levelfield.ground.accuracy import (
    read_accuracy_log,
    score_accuracy_log,
    score_entries,
    size_limit_bytes,
)
from levelfield.ground.registry import task_module

TASKS = ["fmnist-resnet", "seq-transformer", "ctr-dlrm"]


def spec_of(task_id: str):
    return task_module(task_id, "model_spec")


def metric_of(task_id: str):
    return task_module(task_id, "metric")


def write_log(path, rows: np.ndarray, order=None) -> None:
    """An accuracy log as LoadGen 6.0.17 writes it: one entry per line, upper-case hex."""
    order = range(len(rows)) if order is None else order
    lines = [
        f'{{ "seq_id" : {seq}, "qsl_idx" : {int(i)}, "data" : "{rows[i].tobytes().hex().upper()}" }}'
        for seq, i in enumerate(order)
    ]
    path.write_text("[\n" + ",\n".join(lines) + "\n]\n")


def random_outputs(task_id: str, n: int, rng) -> np.ndarray:
    shape = {"fmnist-resnet": (n, 10), "seq-transformer": (n, 12, 10), "ctr-dlrm": (n,)}[task_id]
    return rng.standard_normal(shape).astype(np.float32)


def random_labels(task_id: str, n: int, rng) -> np.ndarray:
    if task_id == "ctr-dlrm":
        return (np.arange(n) % 2).astype(np.float32)
    return rng.integers(0, 10, size=(n, 12) if task_id == "seq-transformer" else n)


# -- responses declared per task ------------------------------------------------------------


@pytest.mark.parametrize("task_id", TASKS)
def test_response_rows_score_like_full_outputs(task_id, tmp_path):
    rng = np.random.default_rng(0)
    spec, metric = spec_of(task_id), metric_of(task_id)
    outputs = random_outputs(task_id, 64, rng)
    labels = random_labels(task_id, 64, rng)
    if task_id == "seq-transformer":  # make exact match non-trivial: half the rows right
        labels[:32] = outputs[:32].argmax(-1)
    rows = spec.to_response(outputs)
    assert rows.dtype == spec.RESPONSE_DTYPE and rows.shape == (64, *spec.RESPONSE_SHAPE)
    assert metric.score(rows, labels) == metric.score(outputs, labels)
    log = tmp_path / "mlperf_log_accuracy.json"
    write_log(log, rows, order=rng.permutation(64))  # LoadGen answers in its own order
    np.testing.assert_array_equal(read_accuracy_log(log, task_id, 64), rows)


def test_response_sizes_are_minimal():
    assert spec_of("fmnist-resnet").RESPONSE_DTYPE.itemsize == 1 and spec_of("fmnist-resnet").RESPONSE_SHAPE == ()
    assert (
        spec_of("seq-transformer").RESPONSE_SHAPE == (12,) and spec_of("seq-transformer").RESPONSE_DTYPE.itemsize == 1
    )
    assert np.dtype("<f4") == spec_of("ctr-dlrm").RESPONSE_DTYPE and spec_of("ctr-dlrm").RESPONSE_SHAPE == ()


def test_fmnist_non_finite_row_is_wrong_as_class_id_too():
    from levelfield.reference.fmnist_resnet.common.metric import (
        NO_CLASS,
        predicted_classes,
        score,
    )

    logits = np.array([[np.nan, 1.0, 0.0], [0.0, 1.0, 0.0], [np.inf, 0.0, 0.0]], dtype=np.float32)
    labels = np.array([0, 1, 0])  # numpy's argmax would call rows 0 and 2 right
    classes = predicted_classes(logits)
    assert classes.tolist() == [NO_CLASS, 1, NO_CLASS]
    assert score(classes, labels) == score(logits, labels) == pytest.approx(1 / 3)


def test_score_accuracy_log_reports_the_threshold(tmp_path):
    from levelfield.rules import load_suite

    task = load_suite().task("ctr-dlrm")
    log = tmp_path / "mlperf_log_accuracy.json"
    write_log(log, np.array([0.1, 0.9, 0.2, 0.8], dtype="<f4"))
    labels = np.array([0, 1, 0, 1], dtype=np.float32)
    result = score_accuracy_log(log, task, labels)
    assert score_entries(json.loads(log.read_text()), task, labels) == result  # the checker's entry point
    assert set(result) == {"metric", "value", "reference_value", "accuracy_ratio", "threshold", "pass", "samples"}
    assert result["metric"] == "roc_auc" and result["value"] == 1.0 and result["samples"] == 4
    assert result["threshold"] == pytest.approx(result["reference_value"] * result["accuracy_ratio"])
    assert read_accuracy_log(log, task, 4).tolist() == pytest.approx([0.1, 0.9, 0.2, 0.8])  # a Task works too


# -- hostile input ---------------------------------------------------------------------------

ROW = np.float32(0.5).tobytes().hex()  # one ctr-dlrm response, 4 bytes


@pytest.mark.parametrize(
    "content, n, message",
    [
        ('{"qsl_idx": 0}', 1, "expected a JSON array"),
        ("[1]", 1, "entry 0: expected an object"),
        ('[["qsl_idx", 0]]', 1, "entry 0: expected an object"),
        (f'[{{"seq_id": 0, "qsl_idx": "0", "data": "{ROW}"}}]', 1, "qsl_idx must be an integer"),
        (f'[{{"seq_id": 0, "qsl_idx": 0.0, "data": "{ROW}"}}]', 1, "qsl_idx must be an integer"),
        (f'[{{"seq_id": 0, "qsl_idx": true, "data": "{ROW}"}}]', 1, "qsl_idx must be an integer"),
        (f'[{{"seq_id": 0, "data": "{ROW}"}}]', 1, "qsl_idx must be an integer"),
        (f'[{{"seq_id": 0, "qsl_idx": -1, "data": "{ROW}"}}]', 1, "qsl_idx -1 outside [0, 1)"),
        (f'[{{"seq_id": 0, "qsl_idx": 1, "data": "{ROW}"}}]', 1, "qsl_idx 1 outside [0, 1)"),
        ('[{"seq_id": 0, "qsl_idx": 0, "data": "zz00zz00"}]', 1, "hex digits"),
        ('[{"seq_id": 0, "qsl_idx": 0, "data": "00 00 00 00"}]', 1, "hex digits"),
        ('[{"seq_id": 0, "qsl_idx": 0, "data": 5}]', 1, "hex digits"),
        ('[{"seq_id": 0, "qsl_idx": 0, "data": "0000"}]', 1, "2 bytes of data, expected 4"),
        ('[{"seq_id": 0, "qsl_idx": 0, "data": "000"}]', 1, "bytes of data, expected 4"),
        (
            f'[{{"seq_id": 0, "qsl_idx": 0, "data": "{ROW}"}}, {{"seq_id": 0, "qsl_idx": 0, "data": "00000000"}}]',
            1,
            "answered twice",
        ),
        (f'[{{"seq_id": 0, "qsl_idx": 0, "data": "{ROW}"}}]', 2, "1 of 2 samples have no entry (first: qsl_idx 1)"),
        (f'[{{"qsl_idx": 0, "data": "{ROW}"}}]', 1, "seq_id must be an integer >= 0"),
        (f'[{{"seq_id": -1, "qsl_idx": 0, "data": "{ROW}"}}]', 1, "seq_id must be an integer >= 0"),
        (f'[{{"seq_id": "0", "qsl_idx": 0, "data": "{ROW}"}}]', 1, "seq_id must be an integer >= 0"),
        ('[{"qsl_idx": 0, "data": ', 1, "not valid JSON"),
        ("[" * 50_000 + "]" * 50_000, 1000, "nested too deeply"),
        ('[{"qsl_idx": ' + "9" * 5000 + ', "data": "00000000"}]', 100, "not usable JSON"),
    ],
)
def test_reader_rejects_malformed_logs(tmp_path, content, n, message):
    log = tmp_path / "mlperf_log_accuracy.json"
    log.write_text(content)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        read_accuracy_log(log, "ctr-dlrm", n)


def test_reader_accepts_repeated_identical_answers(tmp_path):
    log = tmp_path / "mlperf_log_accuracy.json"
    log.write_text(
        json.dumps([{"seq_id": 0, "qsl_idx": 0, "data": ROW}, {"seq_id": 1, "qsl_idx": 0, "data": ROW.upper()}])
    )
    assert read_accuracy_log(log, "ctr-dlrm", 1).tolist() == [0.5]


def test_reader_refuses_files_beyond_the_size_bound(tmp_path):
    log = tmp_path / "mlperf_log_accuracy.json"
    limit = size_limit_bytes(4, 10)
    log.write_text("[" + " " * limit + "]")
    with pytest.raises(ValueError, match=f"larger than {limit} bytes"):
        read_accuracy_log(log, "ctr-dlrm", 10)
    # A log exactly as LoadGen writes it, with the largest seq_id and qsl_idx, stays inside the bound.
    rows = np.zeros(10, dtype="<f4")
    write_log(log, rows)
    text = log.read_text().replace('"seq_id" : 0,', f'"seq_id" : {2**64 - 1},')
    assert len(text) < limit
    log.write_text(text)
    assert read_accuracy_log(log, "ctr-dlrm", 10).shape == (10,)


def test_reader_rejects_non_utf8_and_unknown_tasks(tmp_path):
    log = tmp_path / "mlperf_log_accuracy.json"
    log.write_bytes(b'[{"qsl_idx": 0, "data": "\xff"}]')
    with pytest.raises(ValueError, match="not UTF-8"):
        read_accuracy_log(log, "ctr-dlrm", 1)
    for task_id in ("os", "../ctr-dlrm", "ctr_dlrm.common"):
        with pytest.raises(ValueError, match="task"):
            read_accuracy_log(log, task_id, 1)


# -- acceptance: the runner measures a checkpoint as the trainer does ------------------------

# Chance level of each task's metric: a checkpoint must beat it so that equality is not trivial.
CHANCE = {"fmnist-resnet": 0.1, "ctr-dlrm": 0.5}


@pytest.mark.parametrize("task_id", sorted(CHANCE))
def test_checkpoint_accuracy_through_runner_equals_trainer_eval_accuracy(task_id, tmp_path, rules_copy):
    """Train (smoke) to a checkpoint, then score it with `levelfield infer`.

    The copy of the rules sets the quality target (and the inference reference value the
    rules keep below it) to 0.01 so the one smoke epoch counts as success and the trainer
    saves its weights; eval rows and metric are the rules' own.
    """
    import re

    from levelfield.harness.options import TrainOptions
    from levelfield.harness.runner import infer
    from levelfield.harness.trainer import train

    task_file = rules_copy / default_rules_version() / "tasks" / f"{task_id}.yaml"
    text, replaced = re.subn(r"(?m)^(  target|  reference_value): [0-9.]+", r"\1: 0.01", task_file.read_text())
    assert replaced == 2
    task_file.write_text(text)
    summary = train(
        TrainOptions(
            task_id=task_id,
            framework="jax",
            out=tmp_path / "train",
            profile="smoke",
            seed=7,
            save_weights=True,
            rules_dir=str(rules_copy),
        )
    )
    assert summary["runs"][0]["status"] == "success"
    trainer_value = summary["runs"][0]["evals"][-1][1]
    assert CHANCE[task_id] < trainer_value < 1
    result = infer(
        infer_options(
            task_id,
            "jax",
            "offline",
            "accuracy",
            tmp_path / "infer",
            rules_dir=str(rules_copy),
            weights=tmp_path / "train" / "weights_0.npz",
        )
    )
    assert result["accuracy"]["value"] == trainer_value  # one predict over the same rows: bit-identical
