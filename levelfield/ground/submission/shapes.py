"""The shape of every file levelfield and LoadGen write, against the schemas in rules/schemas/.

    problems = shape_problems("run-result", raw_bytes)          # JSON document: ((None, why), ...)
    problems = shape_problems("loadgen-detail-line", raw_bytes)  # MLLOG file: ((lineno, why), ...)

A file that parses can still hold what its writer cannot have written: a count
of -1, a seed that is a string, an interval event with a value, a result.json
without its LoadGen version. The checks that compare a value with the rules or
with another file name their rule; this module answers the question before
them: is each field of the type and in the range its writer gives it? Its
answers become STR010 findings.

MLLOG schemas describe one line. Their `$defs.keys` holds, per key, a schema
for the whole line (the value's type, the event type); `$defs.key_patterns`
does the same for keys named by a pattern (LoadGen's percentile keys). A key
with neither may hold any value. Each schema is also compiled into plain
predicates (fast_schema.py) that answer "does it keep to it?" in microseconds;
jsonschema runs only for what they reject, so a finding's words are its own.
An MLLOG file's lines are not parsed a second time: parse.mllog_objects hands
over what the loader's parse_mllog of the same bytes parsed.

The function takes raw bytes, not parsed records, so that it is a pure
function of the file (the fuzzer answers it from a table like the parsers).
"""

from __future__ import annotations

import functools
import re

import jsonschema

from levelfield.ground import layout as L
from levelfield.ground.parse import mllog_objects, parse_json, parse_json_text
from levelfield.ground.submission.fast_schema import (
    any_number,
    compile_schema,
    finite_number,
    int_not_bool,
    integral_number,
)
from levelfield.ground.validation import describe, json_path, load_schema

# file name -> schema of the JSON document (rules/schemas/<name>.schema.json)
JSON_SCHEMAS = {
    L.RESULT: "run-result",
    L.SETTINGS: "run-settings",
    L.ACCURACY_JSON: "accuracy",
    L.ENVIRONMENT: "environment",
    L.PLUGINS_FILE: "plugins",
}
DETAIL_LINE_SCHEMA = "loadgen-detail-line"
TRAINING_LINE_SCHEMA = "mllog-training-line"
MLLOG_SCHEMAS = (DETAIL_LINE_SCHEMA, TRAINING_LINE_SCHEMA)
# Findings per file: one wrong field is enough to judge the file, and a fully wrong file stays readable.
MAX_PROBLEMS_PER_FILE = 20


_BASE = jsonschema.Draft202012Validator
# levelfield's files and training logs (Python's json): integers as written; a diverged eval may be NaN.
LEVELFIELD = jsonschema.validators.extend(
    _BASE, type_checker=_BASE.TYPE_CHECKER.redefine("integer", lambda checker, value: int_not_bool(value))
)
# LoadGen's C++ logger prints some counts as doubles ("1.3087e+06"), so an integral number is an integer
# there; it never writes NaN or an infinity, which would pass every bound a schema can state.
LOADGEN = jsonschema.validators.extend(
    _BASE, type_checker=_BASE.TYPE_CHECKER.redefine("number", lambda checker, value: finite_number(value))
)


@functools.cache
def _validator(schema_name: str, part: tuple[str, ...] = ()) -> jsonschema.Draft202012Validator:
    """A compiled validator for the schema, or for its sub-schema at `part` (e.g. ("$defs", "keys", "seed"))."""
    schema = load_schema(schema_name)
    for key in part:
        schema = schema[key]
    return (LOADGEN if schema_name == DETAIL_LINE_SCHEMA else LEVELFIELD)(schema)


def _problems(validator: jsonschema.Draft202012Validator, instance: object) -> list[str]:
    errors = sorted(validator.iter_errors(instance), key=lambda e: (json_path(e.absolute_path), e.message))
    return [f"{json_path(e.absolute_path)}: {describe(e)}" for e in errors]


@functools.cache
def _key_part(schema_name: str, key: str) -> tuple[str, ...] | None:
    """Where the line schema for `key` sits in the schema, or None when the key has none."""
    defs = load_schema(schema_name).get("$defs", {})
    if key in defs.get("keys", {}):
        return ("$defs", "keys", key)
    for pattern in defs.get("key_patterns", {}):
        if re.fullmatch(pattern, key):
            return ("$defs", "key_patterns", pattern)
    return ("$defs", "default_key") if "default_key" in defs else None


def line_problems(schema_name: str, text: str) -> tuple[str, ...]:
    """Problems of one MLLOG line's JSON text (already known to parse into an object with a string key)."""
    entry, error = parse_json_text(text)
    if error or not isinstance(entry, dict):
        return ()  # STR003's: the parser reported it
    return object_problems(schema_name, entry)


def object_problems(schema_name: str, entry: dict) -> tuple[str, ...]:
    """Problems of one parsed MLLOG line: against the line schema, and the schema of its key where it has one.
    The compiled predicates answer first; jsonschema words the problems of a line they reject."""
    key = entry.get("key")
    valid, part = _line_check(schema_name, key if isinstance(key, str) else None)
    return () if valid(entry) else _slow_object_problems(schema_name, part, entry)


@functools.cache
def _line_check(schema_name: str, key: str | None):
    """(valid(line): the line schema and its key's part both kept, the part's place or None), per key."""
    part = None if key is None else _key_part(schema_name, key)
    line = _fast(schema_name)
    if part is None:
        return line, None
    keyed = _fast(schema_name, part)
    return (lambda entry: line(entry) and keyed(entry)), part


def _slow_object_problems(schema_name: str, part: tuple[str, ...] | None, entry: dict) -> tuple[str, ...]:
    found = _problems(_validator(schema_name), entry)
    if part is not None:
        found += [p for p in _problems(_validator(schema_name, part), entry) if p not in found]
    return tuple(found)


@functools.cache
def _fast(schema_name: str, part: tuple[str, ...] = ()):
    """valid(instance): the compiled schema (or sub-schema at `part`), else jsonschema's answer to the same
    question when it uses a keyword fast_schema does not apply."""
    schema = load_schema(schema_name)
    for key in part:
        schema = schema[key]
    if schema_name == DETAIL_LINE_SCHEMA:  # the validator classes' type checkers, above
        compiled = compile_schema(schema, integer=integral_number, number=finite_number)
    else:
        compiled = compile_schema(schema, integer=int_not_bool, number=any_number)
    return compiled if compiled is not None else _validator(schema_name, part).is_valid


def shape_problems(schema_name: str, raw: bytes) -> tuple[tuple[int | None, str], ...]:
    """((line or None, why), ...) for every field of the file that breaks its schema; empty if it keeps
    to it or cannot be parsed at all (the parsers report that)."""
    if schema_name in MLLOG_SCHEMAS:
        objects = mllog_objects(raw)  # parsed once with the loader's parse_mllog of the same bytes
        if objects is None:
            return ()
        found = []
        for lineno, entry in objects:
            found += [(lineno, why) for why in object_problems(schema_name, entry)]
            if len(found) >= MAX_PROBLEMS_PER_FILE:
                break
    else:
        data, error = parse_json(raw)
        if error:
            return ()
        found = [] if _fast(schema_name)(data) else [(None, why) for why in _problems(_validator(schema_name), data)]
    return tuple(found[:MAX_PROBLEMS_PER_FILE])
