"""Damage one value of a JSON document and write it back as text, including text no encoder would write.

    text = mutate_json_text(rng, '{"a": [1, 2]}', "huge-number")   # e.g. '{"a": [1e999, 2]}'

A random node is picked by descending from the root; it is replaced by a
placeholder string, the document is encoded with the standard encoder (fast
even for the 32,768-entry accuracy logs), and the placeholder's encoding is
then swapped for raw text: `NaN`, `1e999`, a 5,000-digit integer, a
duplicated key, 100,000 nested brackets, a syntax error. Each function here
is a pure function of (rng, input): the same seed gives the same damage.
"""

from __future__ import annotations

import json
import random
from typing import Any

# Raw JSON text for each value-level defect class. Python's parser reads 1e999 as inf and refuses
# integers of more than 4,300 digits; both must end as findings, not as exceptions in a check.
HUGE_NUMBERS = (
    "1e308",
    "-1e308",
    "1e999",
    "-1e999",
    "1" + "0" * 400,
    "-" + "9" * 4000,
    "9" * 5000,
    "1e-400",
    "123456789012345678901234567890",
    "18446744073709551617",
    "-0",
)
NON_FINITE = ("NaN", "Infinity", "-Infinity")
SYNTAX_ERRORS = (
    "tru",
    "'single quotes'",
    "{,}",
    "[1,]",
    "undefined",
    "0x1F",
    "01",
    '{"a" 1}',
    '"unterminated',
    "[",
    "}",
    '"\\x41"',
    '"tab\there"',
    "+1",
    ".5",
    "1.",
    "--1",
    '"\\ud800"x',
)
DEPTHS = (65, 200, 1500, 100_000)  # just over the checker's limit, and past the C parser's recursion
LONG_STRINGS = (10_000, 1_000_000)

# Value-level classes: structural=True means the damaged document can never be valid, so the checker
# must report the file whatever else it does.
JSON_CLASSES = {
    "wrong-type": False,
    "huge-number": False,
    "nan-inf": False,
    "drop-key": False,
    "long-string": False,
    "duplicate-key": True,
    "deep-nesting": True,
    "invalid-json": True,
    "truncated-json": True,
}


def _pick_path(rng: random.Random, data: Any) -> list:
    """Keys/indices from the root to a random node (a container is chosen with probability 0.3 per level)."""
    path, node = [], data
    while isinstance(node, (dict, list)) and node and rng.random() > 0.3:
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append(key)
        node = node[key]
    return path


def _get(data: Any, path: list) -> Any:
    for key in path:
        data = data[key]
    return data


def _set(data: Any, path: list, value: Any) -> Any:
    if not path:
        return value
    _get(data, path[:-1])[path[-1]] = value
    return data


def _other_type(rng: random.Random, value: Any) -> Any:
    choices = [None, True, 0, -1, 3.5, "", "text", [], [1, "a"], {}, {"k": None}]
    return rng.choice([c for c in choices if type(c) is not type(value)])


def _raw_for(rng: random.Random, kind: str, node: Any) -> str | None:
    """Raw JSON text that replaces the node, or None when the class edits the node's container."""
    if kind == "wrong-type":
        return json.dumps(_other_type(rng, node))
    if kind == "huge-number":
        return rng.choice(HUGE_NUMBERS)
    if kind == "nan-inf":
        return rng.choice(NON_FINITE)
    if kind == "deep-nesting":
        depth = rng.choice(DEPTHS)
        return "[" * depth + "]" * depth if rng.random() < 0.5 else '{"a": ' * depth + "1" + "}" * depth
    if kind == "long-string":
        return json.dumps("x" * rng.choice(LONG_STRINGS))
    if kind == "invalid-json":
        return rng.choice(SYNTAX_ERRORS)
    return None


def _duplicate_key(rng: random.Random, node: dict) -> str:
    """The object's text with one key written twice (the second with another value)."""
    items = list(node.items())
    key, value = rng.choice(items)
    twin = _other_type(rng, value) if rng.random() < 0.7 else value
    at = rng.randrange(len(items) + 1)
    items.insert(at, (key, twin))
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in items) + "}"


def _placeholder(rng: random.Random) -> str:
    return f"@@levelfield-fuzz-{rng.getrandbits(64):016x}@@"


def mutate_value(rng: random.Random, data: Any, kind: str, *, indent: int | None = None) -> str:
    """JSON text of `data` (parsed, will be modified) with one node damaged by class `kind`."""
    if kind == "truncated-json":
        text = json.dumps(data, indent=indent)
        end = text.rstrip().rfind("}") if text.rstrip().endswith("}") else text.rstrip().rfind("]")
        return text[: rng.randrange(max(end, 1))] if end > 0 else text[:-1] + "["
    if kind == "duplicate-key" or kind == "drop-key":
        dicts = _dict_paths(rng, data)
        if not dicts:  # no object to edit: fall back to a class that needs none
            return mutate_value(rng, data, "invalid-json" if kind == "duplicate-key" else "wrong-type", indent=indent)
        path = rng.choice(dicts)
        node = _get(data, path)
        if kind == "drop-key":
            node.pop(rng.choice(list(node)))
            return json.dumps(data, indent=indent)
        raw = _duplicate_key(rng, node)
    else:
        path = _pick_path(rng, data)
        raw = _raw_for(rng, kind, _get(data, path))
    marker = _placeholder(rng)
    text = json.dumps(_set(data, path, marker), indent=indent)
    return text.replace(json.dumps(marker), raw, 1)


def _dict_paths(rng: random.Random, data: Any, tries: int = 8) -> list[list]:
    """Paths to non-empty objects: the root if it is one, plus a few found by random descent."""
    found = [[]] if isinstance(data, dict) and data else []
    for _ in range(tries):
        path = _pick_path(rng, data)
        while path and not (isinstance(_get(data, path), dict) and _get(data, path)):
            path = path[:-1]
        if isinstance(_get(data, path), dict) and _get(data, path) and path not in found:
            found.append(path)
    return found
