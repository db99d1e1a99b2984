"""The shape schemas (ground/submission/shapes.py, rules/schemas/) accept what the writers write and refuse edits.

Accepting: every file of the example submission, and every LoadGen detail log
MLCommons published in the corpus (real LoadGen builds on real systems, so the
detail-line schema is LoadGen's format, not a copy of one run). Refusing: one
field at a time given a value its writer cannot write.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import EXAMPLE
from levelfield.ground.parse import MLLOG_PREFIX
from levelfield.ground.submission.shapes import (
    DETAIL_LINE_SCHEMA,
    JSON_SCHEMAS,
    TRAINING_LINE_SCHEMA,
    shape_problems,
)

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "mlperf-corpus"


def _example(suffix: str) -> Path:
    return next(p for p in sorted(EXAMPLE.rglob("*")) if p.as_posix().endswith(suffix))


def _mllog(entries: list[dict]) -> bytes:
    return "".join(MLLOG_PREFIX + json.dumps(e) + "\n" for e in entries).encode()


def _lines(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    return [json.loads(line[len(MLLOG_PREFIX) :]) for line in text.splitlines() if line.startswith(MLLOG_PREFIX)]


def test_every_file_of_the_example_keeps_its_shape():
    checked = 0
    for path in sorted(EXAMPLE.rglob("*")):
        if path.name in JSON_SCHEMAS:
            schema = JSON_SCHEMAS[path.name]
        elif path.name == "mlperf_log_detail.txt":
            schema = DETAIL_LINE_SCHEMA
        elif path.parent.name == "training" and path.suffix == ".txt":
            schema = TRAINING_LINE_SCHEMA
        else:
            continue
        assert shape_problems(schema, path.read_bytes()) == (), path
        checked += 1
    assert checked > 40  # every kind of file was there to check


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the MLCommons corpus is not at {CORPUS} (../shared beside the repo)")
def test_every_published_loadgen_detail_log_keeps_the_detail_line_shape():
    logs = sorted(CORPUS.glob("inference_results_*/**/mlperf_log_detail.txt"))
    assert logs
    for path in logs:
        assert shape_problems(DETAIL_LINE_SCHEMA, path.read_bytes()) == (), path


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("result_query_count", "1.0"),  # a count as a string
        ("result_query_count", -1),
        ("effective_min_duration_ms", 0.5),
        ("effective_target_latency_percentile", 0),  # a percentile lies in (0, 1]
        ("requested_qsl_rng_seed", 2**64),  # beyond LoadGen's 64-bit seeds
        ("result_validity", None),
        ("result_min_duration_met", "true"),
        ("result_99.00_percentile_latency_ns", 1.5),  # a key named by a pattern
    ],
)
def test_a_detail_line_value_of_another_type_or_range_is_out_of_shape(key, value):
    line = next(e for e in _lines(_example("run_1/mlperf_log_detail.txt")) if e["key"] == "result_query_count")
    problems = shape_problems(DETAIL_LINE_SCHEMA, _mllog([{**line, "key": key, "value": value}]))
    assert problems and problems[0][0] == 1 and "$.value" in problems[0][1]


@pytest.mark.parametrize(
    ("field", "value"),
    [("time_ms", -1), ("namespace", "x"), ("event_type", "INTERVAL_START"), ("metadata", {}), ("extra", 1)],
)
def test_a_detail_line_envelope_edit_is_out_of_shape(field, value):
    line = _lines(_example("run_1/mlperf_log_detail.txt"))[0]
    assert shape_problems(DETAIL_LINE_SCHEMA, _mllog([{**line, field: value}]))


def test_loadgen_counts_printed_as_doubles_are_integers_but_nan_is_no_number():
    line = next(e for e in _lines(_example("run_1/mlperf_log_detail.txt")) if e["key"] == "result_query_count")
    assert shape_problems(DETAIL_LINE_SCHEMA, _mllog([{**line, "value": 1.3087e06}])) == ()  # LoadGen's "%g"
    nan = (MLLOG_PREFIX + json.dumps({**line, "key": "effective_target_qps", "value": float("nan")}) + "\n").encode()
    assert shape_problems(DETAIL_LINE_SCHEMA, nan)


def test_levelfield_counts_are_written_as_integers():
    path = _example("performance/settings.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert shape_problems("run-settings", json.dumps({**data, "repeats": 3.0}).encode())


def test_an_unknown_detail_key_may_hold_any_value():
    line = _lines(_example("run_1/mlperf_log_detail.txt"))[0]
    assert shape_problems(DETAIL_LINE_SCHEMA, _mllog([{**line, "key": "a_future_key", "value": [1, "a"]}])) == ()


@pytest.mark.parametrize(
    ("key", "field", "value"),
    [
        ("run_start", "value", 1),  # an interval event carries no value
        ("run_start", "event_type", "POINT_IN_TIME"),
        ("seed", "event_type", "INTERVAL_END"),
        ("seed", "time_ms", 0),  # 1970: before MLLOG existed
        ("seed", "time_ms", 2**63),
        ("seed", "time_ms", 1.5e12 + 0.5),
        ("seed", "namespace", None),
        ("cache_clear", "value", False),
        ("levelfield_device", "value", ""),
        ("submission_status", "value", "bought"),
        ("eval_accuracy", "value", 2**63),  # every metric of the rules is a fraction
    ],
)
def test_a_training_line_edit_is_out_of_shape(key, field, value):
    line = next(e for e in _lines(_example("training/result_0.txt")) if e["key"] == key)
    assert shape_problems(TRAINING_LINE_SCHEMA, _mllog([{**line, field: value}]))


def _determinism_line(value: object) -> bytes:
    """A levelfield_determinism line on the seed line's envelope (the example's logs predate the optional key)."""
    line = next(e for e in _lines(_example("training/result_0.txt")) if e["key"] == "seed")
    return _mllog([{**line, "key": "levelfield_determinism", "value": value}])


DETERMINISM = {
    "mode": "compiled",
    "framework": {"op_determinism": False, "xla_flags": "", "jax_default_matmul_precision": None},
    "threads": {"intra_op": 0, "inter_op": 2},
}
H100 = {
    "kind": "cuda",
    "name": "NVIDIA H100 80GB HBM3",
    "count": 1,
    "driver": "580.159.04",
    "cuda_runtime": "13.0",
    "cudnn": "91002",
    "nccl": "2.27.7",
}


def test_a_determinism_record_keeps_its_shape():
    assert shape_problems(TRAINING_LINE_SCHEMA, _determinism_line(DETERMINISM)) == ()


@pytest.mark.parametrize(
    "edit",
    [
        {"mode": "fast"},  # compiled or eager only
        {"framework": {}},  # a record names at least one switch
        {"framework": {"op_determinism": [True]}},  # a switch is one scalar
        {"threads": {"intra_op": -1}},
        {"threads": {"intra_op": 1.5}},
        {"seed": 3},  # no other field
    ],
)
def test_a_determinism_record_edit_is_out_of_shape(edit):
    assert shape_problems(TRAINING_LINE_SCHEMA, _determinism_line({**DETERMINISM, **edit}))


def test_a_determinism_record_may_name_its_device():
    assert shape_problems(TRAINING_LINE_SCHEMA, _determinism_line({**DETERMINISM, "device": H100})) == ()
    cpu = {**H100, "kind": "cpu", "name": "AMD EPYC 9B14", "count": 1}
    cpu.update(driver=None, cuda_runtime=None, cudnn=None, nccl=None)
    assert shape_problems(TRAINING_LINE_SCHEMA, _determinism_line({**DETERMINISM, "device": cpu})) == ()


@pytest.mark.parametrize(
    "edit",
    [{"kind": "tpu"}, {"count": 0}, {"driver": 580}, {"clock_mhz": 1980}],
)
def test_a_device_record_edit_is_out_of_shape(edit):
    assert shape_problems(TRAINING_LINE_SCHEMA, _determinism_line({**DETERMINISM, "device": {**H100, **edit}}))


def test_a_determinism_record_says_all_three_parts():
    value = {k: v for k, v in DETERMINISM.items() if k != "threads"}
    assert shape_problems(TRAINING_LINE_SCHEMA, _determinism_line(value))


def test_a_diverged_eval_may_be_nan():
    line = next(e for e in _lines(_example("training/result_0.txt")) if e["key"] == "eval_accuracy")
    text = (MLLOG_PREFIX + json.dumps({**line, "value": float("nan")}) + "\n").encode()
    assert shape_problems(TRAINING_LINE_SCHEMA, text) == ()


def test_run_stop_must_say_its_status_and_reason():
    line = next(e for e in _lines(_example("training/result_0.txt")) if e["key"] == "run_stop")
    for metadata in (
        {**line["metadata"], "status": "won"},
        {k: v for k, v in line["metadata"].items() if k != "reason"},
    ):
        assert shape_problems(TRAINING_LINE_SCHEMA, _mllog([{**line, "metadata": metadata}]))


@pytest.mark.parametrize(
    ("suffix", "edit"),
    [
        ("performance/result.json", lambda d: d.pop("loadgen_version")),
        ("performance/result.json", lambda d: d.update(loadgen_errors=-1)),
        ("performance/result.json", lambda d: d["environment"].update(python=3.11)),
        ("accuracy/result.json", lambda d: d.pop("accuracy")),
        ("performance/settings.json", lambda d: d.update(qsl_rng_seed="1")),
        ("performance/settings.json", lambda d: d["sizing"]["batch_costs"][0].update(median_ms=-1)),
        ("accuracy/accuracy.json", lambda d: d.update(samples=0)),
        ("jax/environment.json", lambda d: d.update(digest="x")),
    ],
)
def test_a_json_field_edit_is_out_of_shape(suffix, edit):
    path = _example(suffix)
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    assert shape_problems(JSON_SCHEMAS[path.name], json.dumps(data).encode())


def test_an_aborted_result_json_is_judged_by_its_status_only():
    record = {"status": "aborted", "reason": "interrupted", "phase": "warm-up", "submittable": False}
    assert shape_problems("run-result", json.dumps(record).encode()) == ()


def test_unparseable_input_is_left_to_the_parsers():
    assert shape_problems("run-result", b"{not json") == ()
    assert shape_problems(DETAIL_LINE_SCHEMA, b"\xff\xfe") == ()
    assert shape_problems(DETAIL_LINE_SCHEMA, b':::MLLOG {"key": "run_st\n') == ()
