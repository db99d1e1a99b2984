"""Schema validation with one readable line per problem.

Every file a user writes (system description, settings overrides) and every
rules file is validated against a JSON Schema (draft 2020-12) in
`rules/schemas/`. Errors read like

    rules/1.0/tasks/fmnist-resnet.yaml: $.quality.target: expected number, got 'ninety'

so the user sees the file, the place in it, the value found and the value
expected, without a traceback. The YAML and JSON loaders here are strict
(`yaml.safe_load` semantics, duplicate keys refused, sizes bounded).

The schemas are data of the rules (`levelfield.rules` package data, read with
importlib.resources); this module imports no stage, so every stage validates
its files the same way.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from jsonschema.exceptions import ValidationError, best_match

from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import DEFAULT_READ_LIMIT_BYTES, read_text_limited

SCHEMA_DIR = "schemas"
# Strings a tool writes for a person to replace, e.g. "<FILL: submitter>".
PLACEHOLDER_PREFIX = "<FILL"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_JSON_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


class SchemaError(UserError):
    """A file failed validation; `problems` holds one line per problem."""

    def __init__(self, source: Path | str, problems: list[str]):
        self.source = str(source)
        self.problems = problems
        super().__init__("\n".join(f"{self.source}: {p}" for p in problems))


@functools.cache
def load_schema(name: str) -> dict:
    """The schema `rules/schemas/<name>.schema.json`, shipped as package data."""
    ref = resources.files("levelfield.rules").joinpath(SCHEMA_DIR, f"{name}.schema.json")
    schema = json.loads(ref.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def json_path(parts: Iterable[str | int]) -> str:
    """`$.a.b[3]` for a jsonschema error path."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out


def show(value: Any, limit: int = 60) -> str:
    """A value as the user wrote it, shortened: strings quoted, others as JSON."""
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_type(value: Any) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def describe(error: ValidationError) -> str:
    """One sentence for one schema error: what was expected and what was found."""
    kind, want, found = error.validator, error.validator_value, error.instance
    if error.context:  # anyOf / oneOf: the closest alternative explains best
        return describe(best_match(error.context))
    if isinstance(found, str) and found.startswith(PLACEHOLDER_PREFIX):
        return f"placeholder not filled in: {show(found)}"
    if kind == "type":
        expected = " or ".join(want) if isinstance(want, list) else want
        return f"expected {expected}, got {show(found)}"
    if kind == "enum":
        return f"expected one of {', '.join(show(v) for v in want)}; got {show(found)}"
    if kind == "const":
        return f"expected {show(want)}, got {show(found)}"
    if kind == "required":
        missing = [k for k in want if k not in found]
        return f"missing required key {', '.join(show(k) for k in missing)}"
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = [k for k in found if k not in allowed and not _matches_pattern(error.schema, k)]
        return f"unknown key {', '.join(show(k) for k in sorted(extra))} (allowed: {', '.join(allowed) or 'none'})"
    bounds = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
    if kind in bounds:
        return f"expected a value {bounds[kind]} {want}, got {show(found)}"
    if kind == "pattern":
        return f"expected a string matching {want!r}, got {show(found)}"
    if kind in ("minLength", "maxLength", "minItems", "maxItems"):
        size = "at least" if kind.startswith("min") else "at most"
        unit = "characters" if kind.endswith("Length") else "items"
        return f"expected {size} {want} {unit}, got {show(found)}"
    if kind == "uniqueItems":
        return f"expected unique items, got {show(found)}"
    return error.message


def _matches_pattern(schema: dict, key: str) -> bool:
    return any(re.search(p, key) for p in schema.get("patternProperties", {}))


def problems(instance: Any, schema_name: str) -> list[str]:
    """All schema problems of `instance`, one `$.path: sentence` line each, sorted by path."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    errors = sorted(validator.iter_errors(instance), key=lambda e: (json_path(e.absolute_path), e.message))
    return [f"{json_path(e.absolute_path)}: {describe(e)}" for e in errors]


def validate(instance: Any, schema_name: str, source: Path | str) -> None:
    """Raise `SchemaError` naming `source` when `instance` breaks the schema."""
    found = problems(instance, schema_name)
    if found:
        raise SchemaError(source, found)


class _StrictSafeLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses duplicate keys instead of keeping the last one silently, and aliases."""

    def compose_node(self, parent, index):
        # An alias (*name) repeats a node without copying it: nine aliases of nine aliases ... ("billion
        # laughs") build a value that printing or validating walks for hours. No levelfield file needs one.
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None,
                None,
                f"alias *{event.anchor} (anchors and aliases are not allowed; write the value out)",
                event.start_mark,
            )
        return super().compose_node(parent, index)


def _construct_mapping(loader: _StrictSafeLoader, node: yaml.MappingNode, deep: bool = False):
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictSafeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(path: Path, limit_bytes: int = DEFAULT_READ_LIMIT_BYTES) -> Any:
    """Parse a YAML file safely (no tags that build objects, no duplicate keys, bounded size)."""
    return parse_yaml(read_text_limited(path, limit_bytes), path)


def parse_yaml(text: str, path: Path | str) -> Any:
    """`load_yaml` for text already read; `path` names the file in errors."""
    loader = _StrictSafeLoader(text)  # what yaml.safe_load does, with the duplicate-key check added
    try:
        return loader.get_single_data()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        what = getattr(e, "problem", None) or str(e)
        raise UserError(f"{path}{where}: invalid YAML: {what}") from None
    finally:
        loader.dispose()


def load_json(path: Path, limit_bytes: int = DEFAULT_READ_LIMIT_BYTES) -> Any:
    """Parse a JSON file with a size bound; errors name the line and column."""
    text = read_text_limited(path, limit_bytes)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{e.lineno}: invalid JSON: {e.msg} (column {e.colno})") from None


def load_document(path: Path) -> Any:
    """A YAML or JSON file by its suffix (`.json` is JSON, anything else YAML)."""
    return load_json(path) if Path(path).suffix == ".json" else load_yaml(path)
