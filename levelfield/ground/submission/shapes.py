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
with neither may hold any value. Results are cached per line text, so the
unchanged lines of a tree checked again cost nothing.

The function takes raw bytes, not parsed records, so that it is a pure
function of the file (the fuzzer answers it from a table like the parsers).
"""

from __future__ import annotations

import functools
import math
import re

import jsonschema

from levelfield.ground import layout as L
from levelfield.ground.parse import MAX_LINE_CHARS, MLLOG_PREFIX, decode, parse_json, parse_json_text
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


def _is_integer(checker, value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # json.dumps writes a count as 12, never 12.0


def _is_finite_number(checker, value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_BASE = jsonschema.Draft202012Validator
# levelfield's files and training logs (Python's json): integers as written; a diverged eval may be NaN.
LEVELFIELD = jsonschema.validators.extend(_BASE, type_checker=_BASE.TYPE_CHECKER.redefine("integer", _is_integer))
# LoadGen's C++ logger prints some counts as doubles ("1.3087e+06"), so an integral number is an integer
# there; it never writes NaN or an infinity, which would pass every bound a schema can state.
LOADGEN = jsonschema.validators.extend(_BASE, type_checker=_BASE.TYPE_CHECKER.redefine("number", _is_finite_number))


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


@functools.lru_cache(maxsize=200_000)
def line_problems(schema_name: str, text: str) -> tuple[str, ...]:
    """Problems of one MLLOG line's JSON text (already known to parse into an object with a string key)."""
    entry, error = parse_json_text(text)
    if error or not isinstance(entry, dict):
        return ()  # STR003's: the parser reported it
    found = _problems(_validator(schema_name), entry)
    part = _key_part(schema_name, entry.get("key")) if isinstance(entry.get("key"), str) else None
    if part is not None:
        found += [p for p in _problems(_validator(schema_name, part), entry) if p not in found]
    return tuple(found)


def shape_problems(schema_name: str, raw: bytes) -> tuple[tuple[int | None, str], ...]:
    """((line or None, why), ...) for every field of the file that breaks its schema; empty if it keeps
    to it or cannot be parsed at all (the parsers report that)."""
    if schema_name in MLLOG_SCHEMAS:
        text, error = decode(raw)
        if error:
            return ()
        found = [
            (lineno, why)
            for lineno, line in enumerate(text.split("\n"), start=1)
            if line.startswith(MLLOG_PREFIX) and len(line) <= MAX_LINE_CHARS  # longer: the parser's
            for why in line_problems(schema_name, line[len(MLLOG_PREFIX) :])
        ]
    else:
        data, error = parse_json(raw)
        if error:
            return ()
        found = [(None, why) for why in _problems(_validator(schema_name), data)]
    return tuple(found[:MAX_PROBLEMS_PER_FILE])
