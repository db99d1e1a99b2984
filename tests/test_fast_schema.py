"""The compiled schemas (ground/submission/fast_schema.py) say "valid" exactly when jsonschema does.

shapes.py asks the compiled predicate first and jsonschema only for what it rejects, so a predicate that
accepted an instance jsonschema rejects would silently drop a STR010 finding. These tests hold the two
verdicts equal on every line and document levelfield and LoadGen wrote into the example and the MLCommons
corpus, and on each of them damaged one field at a time with values of every JSON type (a few seconds).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from levelfield.ground.parse import mllog_objects, parse_json
from levelfield.ground.submission import shapes
from levelfield.ground.submission.fast_schema import any_number, compile_schema, equal, int_not_bool
from levelfield.ground.validation import load_schema

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "submissions" / "example"
CORPUS = ROOT.parent / "shared" / "mlperf-corpus" / "inference_results_v4.1"
PROBES = (
    None,
    True,
    False,
    0,
    -1,
    1,
    1.0,
    2.5,
    -0.5,
    math.nan,
    math.inf,
    -math.inf,
    2**70,
    "",
    "x",
    [],
    [1],
    {},
    {"a": 1},
)


def _lines(schema: str, pattern: str, root: Path) -> list[dict]:
    out = []
    for path in sorted(root.rglob(pattern)) if root.is_dir() else []:
        out += [entry for _, entry in mllog_objects(path.read_bytes()) or []]
    return out


def _damaged(entry: dict, *, every_field: bool) -> list[dict]:
    """The entry with its value (every_field: each field and each metadata field) replaced by each probe,
    removed, and a field added."""
    out = [{**entry, "extra": 1}]
    for name in entry if every_field else ["value"]:
        out.append({k: v for k, v in entry.items() if k != name})
        out += [{**entry, name: probe} for probe in PROBES]
    metadata = entry.get("metadata")
    if every_field and isinstance(metadata, dict):
        for name in metadata:
            out += [{**entry, "metadata": {**metadata, name: probe}} for probe in PROBES[:12]]
        out.append({**entry, "metadata": {**metadata, "extra": 1}})
    return out


def _compiled(schema: str) -> bool:
    """Every part of the schema is compiled (else shapes asks jsonschema, and the comparison proves nothing)."""
    defs = load_schema(schema).get("$defs", {})
    parts = [()] + [("$defs", kind, name) for kind in ("keys", "key_patterns") for name in defs.get(kind, {})]
    return all(compile_schema(_at(schema, part), integer=int_not_bool, number=any_number) is not None for part in parts)


def _at(schema: str, part: tuple) -> object:
    out = load_schema(schema)
    for key in part:
        out = out[key]
    return out


def _agree(schema: str, instances: list) -> int:
    """Compare the verdicts on the whole line and on its key's part; the number of disagreements."""
    wrong = 0
    for entry in instances:
        parts = [()]
        if isinstance(entry, dict) and isinstance(entry.get("key"), str):
            part = shapes._key_part(schema, entry["key"])
            parts += [part] if part is not None else []
        for part in parts:
            if shapes._fast(schema, part)(entry) != shapes._validator(schema, part).is_valid(entry):
                wrong += 1
                print("disagree:", schema, part, json.dumps(entry, default=str)[:300])
    return wrong


@pytest.mark.parametrize(
    ("schema", "pattern", "root"),
    [
        (shapes.TRAINING_LINE_SCHEMA, "result_*.txt", EXAMPLE),
        (shapes.DETAIL_LINE_SCHEMA, "mlperf_log_detail.txt", EXAMPLE),
        (shapes.DETAIL_LINE_SCHEMA, "mlperf_log_detail.txt", CORPUS),
    ],
)
def test_line_verdicts_equal_jsonschema(schema, pattern, root):
    lines = _lines(schema, pattern, root)
    if not lines:
        pytest.skip(f"no {pattern} below {root}")
    # Every key's line once as logged and with each type of value (each key's schema types its value);
    # three lines damaged in every field (the line schema is the same for every key).
    by_key = list({e.get("key"): e for e in lines}.values())
    instances = by_key + [d for i, e in enumerate(by_key) for d in _damaged(e, every_field=i < 3)]
    assert _compiled(schema)
    assert _agree(schema, instances) == 0


# Documents the example has no copy of (its results ran no plugin), as `levelfield package` writes them.
NOT_IN_EXAMPLE = {
    "plugins.json": [
        {"plugins": [{"distribution": "example-plugin", "version": "1.0", "sha256": "0" * 64, "frameworks": ["numpy"]}]}
    ],
}


@pytest.mark.parametrize("name", sorted(shapes.JSON_SCHEMAS))
def test_document_verdicts_equal_jsonschema(name):
    schema = shapes.JSON_SCHEMAS[name]
    documents = [parse_json(p.read_bytes())[0] for p in sorted(EXAMPLE.rglob(name))] or NOT_IN_EXAMPLE[name]
    assert documents
    instances = list(documents)
    doc = documents[0]
    for key, value in doc.items():
        instances += [{**doc, key: probe} for probe in PROBES]
        instances.append({k: v for k, v in doc.items() if k != key})
        if isinstance(value, dict):
            for inner in value:
                instances += [{**doc, key: {**value, inner: probe}} for probe in (None, -1, 2.5, math.nan, "x")]
    assert _compiled(schema)
    assert _agree(schema, instances) == 0
    # Untouched documents are valid, and some damaged ones are not: the comparison covers both answers.
    verdicts = {shapes._validator(schema).is_valid(i) for i in instances}
    assert verdicts == {True, False}


def test_keywords_outside_the_subset_are_not_compiled():
    integer = int_not_bool
    assert compile_schema({"$ref": "#/$defs/x"}, integer=integer, number=any_number) is None
    assert compile_schema({"type": "array", "contains": {}}, integer=integer, number=any_number) is None
    assert compile_schema({"properties": {"a": {"dependentSchemas": {}}}}, integer=integer, number=any_number) is None


def test_bounds_and_equality_follow_jsonschema():
    valid = compile_schema({"minimum": 0, "maximum": 1}, integer=int_not_bool, number=any_number)
    assert valid(math.nan) and valid("not a number") and valid(0.5) and not valid(-1) and not valid(2)
    const_true = compile_schema({"const": True}, integer=int_not_bool, number=any_number)
    assert const_true(True) and not const_true(1)
    assert equal([1], [1.0]) and not equal([True], [1]) and equal({"a": 0}, {"a": 0.0}) and not equal({"a": 0}, {})
    ifs = compile_schema(
        {"if": {"properties": {"k": {"const": "x"}}}, "then": {"required": ["v"]}, "else": {"required": ["w"]}},
        integer=int_not_bool,
        number=any_number,
    )
    assert ifs({"k": "x", "v": 1}) and not ifs({"k": "x", "w": 1}) and ifs({"k": "y", "w": 1}) and not ifs({"k": "y"})


def test_one_of_and_unique_items_follow_jsonschema():
    """The two keywords the merged schemas brought (oneOf: a figure or "not exposed"; uniqueItems: a plugin's
    frameworks), against jsonschema's own verdicts, true told from 1 as its equality tells them."""
    schemas = [
        {"uniqueItems": True},
        {"oneOf": [{"type": "integer", "minimum": 0}, {"const": "not exposed"}]},
        {"oneOf": [{"type": "number"}, {"type": "integer"}]},  # an integer matches both: not exactly one
    ]
    instances = [
        [1, True],
        [1, 1],
        [[1], [1.0]],
        [{"a": 0}, {"a": 0.0}],
        ["x", "y"],
        [],
        3,
        -1,
        2.5,
        "not exposed",
        "x",
    ]
    for schema in schemas:
        valid = compile_schema(schema, integer=int_not_bool, number=any_number)
        assert valid is not None
        for instance in instances:
            assert valid(instance) == shapes.LEVELFIELD(schema).is_valid(instance), (schema, instance)
