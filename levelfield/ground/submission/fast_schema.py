"""A JSON Schema compiled into plain Python predicates: "does this instance keep to it?" in microseconds.

    valid = compile_schema(schema, integer=int_not_bool, number=finite_number)   # None: a keyword not covered
    valid(instance)             # True exactly when jsonschema's validator finds no error

jsonschema walks a schema keyword by keyword for every instance and builds a
validator object per level (about 0.4 ms for one MLLOG line); a tree of
thousands of results holds hundreds of thousands of lines. This module turns a
schema once into nested closures that answer the same yes/no question with
the same semantics (draft 2020-12 as the installed jsonschema applies it:
`type` by the validator's own type checker, `const` and `enum` by its
equality, which tells true from 1; `pattern` by `re.search`; a keyword that
does not apply to an instance's type is satisfied). The shapes module asks it
first and asks jsonschema only for an instance it rejects, so the messages of
a finding are jsonschema's own, word for word.

A schema that uses a keyword outside `APPLIED` and `ANNOTATIONS` (a `$ref`,
`contains`, ...) is not compiled (None): shapes then validates
with jsonschema alone, as before. tests/test_fast_schema.py holds every
verdict against jsonschema's on the real files' lines and on their mutations.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

Predicate = Callable[[object], bool]

# Keywords that never constrain an instance (jsonschema asserts no `format` without a format checker,
# and shapes builds its validators without one; $defs holds schemas that apply only where used).
ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples", "format", "deprecated"}
)
APPLIED = frozenset(
    {
        "type",
        "const",
        "enum",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "properties",
        "patternProperties",
        "additionalProperties",
        "required",
        "minProperties",
        "maxProperties",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
        "allOf",
        "anyOf",
        "oneOf",
        "if",
        "then",
        "else",
    }
)


class NotCompiled(ValueError):
    """The schema uses a keyword this module does not apply."""


# -- the type checkers: the same functions the validator classes in shapes.py are built with ----------------
def int_not_bool(value: object) -> bool:
    """levelfield's integer: an int that is not a bool (shapes.LEVELFIELD)."""
    return isinstance(value, int) and not isinstance(value, bool)


def integral_number(value: object) -> bool:
    """Draft 2020-12's integer: an int that is not a bool, or a float with no fractional part."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or isinstance(value, float) and value.is_integer()


def any_number(value: object) -> bool:
    """Draft 2020-12's number: an int or float that is not a bool (NaN and infinities included)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite_number(value: object) -> bool:
    """LoadGen's number: a finite int or float that is not a bool (shapes.LOADGEN)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_TRUE, _FALSE = object(), object()  # what true and false compare as: equal to nothing else
_ABSENT = object()  # a member an object does not have


def _unbool(value: object) -> object:
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    return value


def equal(one: object, two: object) -> bool:
    """jsonschema's equality for const and enum (its _utils.equal): true is not 1, [1] equals [1.0]."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(equal(i, j) for i, j in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return one.keys() == two.keys() and all(equal(one[key], two[key]) for key in one)
    return _unbool(one) == _unbool(two)


def compile_schema(schema: object, *, integer: Predicate, number: Predicate) -> Predicate | None:
    """valid(instance) for `schema` under the given integer and number type checks; None when the schema
    uses a keyword this module does not apply."""
    types = {
        "array": lambda v: isinstance(v, list),
        "boolean": lambda v: isinstance(v, bool),
        "integer": integer,
        "null": lambda v: v is None,
        "number": number,
        "object": lambda v: isinstance(v, dict),
        "string": lambda v: isinstance(v, str),
    }
    try:
        return _compile(schema, types)
    except NotCompiled:
        return None


def _compile(schema: object, types: dict[str, Predicate]) -> Predicate:
    if schema is True or schema == {}:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, dict):
        raise NotCompiled(f"a schema that is a {type(schema).__name__}")
    unknown = set(schema) - APPLIED - ANNOTATIONS
    if unknown:
        raise NotCompiled(", ".join(sorted(unknown)))
    checks = [check for keyword in schema if (check := _keyword(keyword, schema, types)) is not None]
    return _all(checks)


def _all(checks: list[Predicate]) -> Predicate:
    """One predicate for all of `checks` (unrolled for the common short lists: a call less per level)."""
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)
    if len(checks) == 3:
        first, second, third = checks
        return lambda value: first(value) and second(value) and third(value)

    return lambda value: all(check(value) for check in checks)


def _always(value: object) -> bool:
    return True


def _never(value: object) -> bool:
    return False


def _keyword(keyword: str, schema: dict, types: dict[str, Predicate]) -> Predicate | None:
    """One keyword's predicate (None: nothing to check, or applied together with another keyword)."""
    if keyword in ANNOTATIONS:
        return None
    argument = schema[keyword]
    number, string, array, obj = types["number"], types["string"], types["array"], types["object"]
    if keyword == "type":
        names = [argument] if isinstance(argument, str) else list(argument)
        if any(name not in types for name in names):
            raise NotCompiled(f"type {argument!r}")
        tests = [types[name] for name in names]
        return tests[0] if len(tests) == 1 else lambda v: any(test(v) for test in tests)
    if keyword == "const":
        return lambda v: equal(v, argument)
    if keyword == "enum":
        return lambda v: any(equal(v, item) for item in argument)
    # Each bound fails exactly when jsonschema's comparison does (`instance < minimum`, ...), so NaN, which
    # compares false with everything, passes every bound here as it does there.
    if keyword == "minimum":
        return lambda v: not (number(v) and v < argument)
    if keyword == "maximum":
        return lambda v: not (number(v) and v > argument)
    if keyword == "exclusiveMinimum":
        return lambda v: not (number(v) and v <= argument)
    if keyword == "exclusiveMaximum":
        return lambda v: not (number(v) and v >= argument)
    if keyword == "minLength":
        return lambda v: not string(v) or len(v) >= argument
    if keyword == "maxLength":
        return lambda v: not string(v) or len(v) <= argument
    if keyword == "pattern":
        search = re.compile(argument).search
        return lambda v: not string(v) or search(v) is not None
    if keyword == "required":
        return lambda v: not obj(v) or all(name in v for name in argument)
    if keyword == "minProperties":
        return lambda v: not obj(v) or len(v) >= argument
    if keyword == "maxProperties":
        return lambda v: not obj(v) or len(v) <= argument
    if keyword == "minItems":
        return lambda v: not array(v) or len(v) >= argument
    if keyword == "maxItems":
        return lambda v: not array(v) or len(v) <= argument
    if keyword == "items":
        item = _compile(argument, types)
        return lambda v: not array(v) or all(item(i) for i in v)
    if keyword == "allOf":
        parts = [_compile(s, types) for s in argument]
        return lambda v: all(part(v) for part in parts)
    if keyword == "anyOf":
        parts = [_compile(s, types) for s in argument]
        return lambda v: any(part(v) for part in parts)
    if keyword == "uniqueItems":  # by the same equality as enum (true is not 1); arrays here are short
        if not argument:
            return None
        return lambda v: (
            not isinstance(v, list) or not any(equal(v[i], v[j]) for i in range(len(v)) for j in range(i + 1, len(v)))
        )
    if keyword == "oneOf":  # exactly one: e.g. a number or the string "not exposed"
        parts = [_compile(s, types) for s in argument]
        return lambda v: sum(1 for part in parts if part(v)) == 1
    if keyword == "if":
        condition = _compile(argument, types)
        then = _compile(schema.get("then", True), types)
        otherwise = _compile(schema.get("else", True), types)
        return lambda v: then(v) if condition(v) else otherwise(v)
    if keyword in ("then", "else"):
        return None  # applied with "if"; without one they do nothing (draft 2020-12)
    if keyword == "properties":
        return _properties(schema, types)
    if keyword in ("patternProperties", "additionalProperties"):
        # Applied with "properties" when there is one (they depend on which names it lists).
        return None if "properties" in schema else _properties(schema, types)
    raise NotCompiled(keyword)  # unreachable: APPLIED lists exactly the keywords above


def _properties(schema: dict, types: dict[str, Predicate]) -> Predicate:
    """properties, patternProperties and additionalProperties together, as one pass over the object."""
    obj = types["object"]
    named = {name: _compile(sub, types) for name, sub in schema.get("properties", {}).items()}
    patterned = [(re.compile(p).search, _compile(sub, types)) for p, sub in schema.get("patternProperties", {}).items()]
    extra = _compile(schema["additionalProperties"], types) if "additionalProperties" in schema else None

    if not patterned and (extra is None or extra is _never):
        # The usual case: the listed members checked by name (those any value keeps, like `"value": {}`,
        # skipped), and with additionalProperties false every member's name among them, one set test in C.
        names = frozenset(named)
        checked = tuple((name, check) for name, check in named.items() if check is not _always)
        closed = extra is _never

        def simple(value: object) -> bool:
            if not obj(value):
                return True
            if closed and not value.keys() <= names:
                return False
            for name, check in checked:
                item = value.get(name, _ABSENT)
                if item is not _ABSENT and not check(item):
                    return False
            return True

        return simple

    def valid(value: object) -> bool:
        if not obj(value):
            return True
        for name, item in value.items():
            check = named.get(name)
            if check is not None and not check(item):
                return False
            matched = False
            for search, sub in patterned:
                if search(name) is not None:
                    matched = True
                    if not sub(item):
                        return False
            if check is None and not matched and extra is not None and not extra(item):
                return False
        return True

    return valid
