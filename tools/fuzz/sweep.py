"""Hostile values in every field: the systematic complement of the random classes.

    fields = field_sites(ws)                 # one site per distinct field of the example's files
    case = sweep_case(ws, fields[12], HOSTILE_VALUES[0], index=0)

A site is a JSON field (by file name and path) or an MLLOG field (by log kind,
key and path inside the line), down to four levels, lists cut to their first
two items, each counted once however many files or lines hold it. Each
hostile value replaces the field and the MANIFEST is resealed, so the value
reaches every check that reads the field. Random inputs of the class
`hostile-field` draw one site and one value; `--sweep` runs every pair.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from levelfield.ground.parse import MLLOG_PREFIX
from levelfield.tools.fuzz import mutate as M
from levelfield.tools.fuzz.workspace import Workspace, Write

if TYPE_CHECKING:  # annotations only: cases.py imports this module
    from levelfield.tools.fuzz.cases import Case

# Raw JSON text: beyond a double, non-finite, empty, long, of another type, or a number as a string.
HOSTILE_VALUES = (
    "1" + "0" * 400,
    "-" + "9" * 400,
    "1e999",
    "-1e999",
    "NaN",
    '""',
    json.dumps("x" * 5000),
    "[]",
    "{}",
    "null",
    "true",
    "-1",
    "0",
    "9223372036854775808",
    "0.5",
    '"1.0"',
    '[1, "a", null]',
    '{"a": {"b": []}}',
)
MAX_DEPTH = 4
_MARK = "@@levelfield-sweep@@"
_SITES: dict[int, list] = {}


def _paths(node: Any, prefix: tuple = (), depth: int = 0):
    yield prefix
    if depth >= MAX_DEPTH:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,), depth + 1)
    elif isinstance(node, list):
        for i, value in enumerate(node[:2]):
            yield from _paths(value, prefix + (i,), depth + 1)


def field_sites(ws: Workspace) -> list[tuple[str, int | None, tuple]]:
    """(file, MLLOG line index or None, path) of each distinct field, in a stable order."""
    if id(ws) not in _SITES:
        seen, sites = set(), []
        for rel, data in sorted(ws.base_files.items()):
            kind = M.file_kind(rel)
            if kind == M.JSON:
                for path in _paths(json.loads(data)):
                    if (rel.rsplit("/", 1)[-1], path) not in seen:
                        seen.add((rel.rsplit("/", 1)[-1], path))
                        sites.append((rel, None, path))
            elif kind == M.MLLOG:
                log = "detail" if rel.endswith("mlperf_log_detail.txt") else "training"
                for i, line in enumerate(data.decode("utf-8").split("\n")):
                    if not line.startswith(MLLOG_PREFIX):
                        continue
                    entry = json.loads(line[len(MLLOG_PREFIX) :])
                    for path in _paths(entry):
                        # the key names the line; file and lineno only locate the logging call
                        if path[:1] == ("key",) or path[:2] in (("metadata", "file"), ("metadata", "lineno")):
                            continue
                        if (log, entry["key"], path) not in seen:
                            seen.add((log, entry["key"], path))
                            sites.append((rel, i, path))
        _SITES[id(ws)] = sites
    return _SITES[id(ws)]


def _with_raw(doc: Any, path: tuple, raw: str, indent: int | None) -> str:
    if not path:
        return raw
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = _MARK
    return json.dumps(doc, indent=indent).replace(json.dumps(_MARK), raw, 1)


def sweep_case(ws: Workspace, site: tuple, raw: str, index: int) -> Case:
    from levelfield.tools.fuzz.cases import Case

    rel, line_index, path = site
    data = ws.base_files[rel]
    if line_index is None:
        damaged = _with_raw(json.loads(data), path, raw, 2).encode("utf-8")
    else:
        lines = data.decode("utf-8").split("\n")
        lines[line_index] = MLLOG_PREFIX + _with_raw(
            json.loads(lines[line_index][len(MLLOG_PREFIX) :]), path, raw, None
        )
        damaged = "\n".join(lines).encode("utf-8")
    where = f"{rel}{'' if line_index is None else f' line {line_index + 1}'} {'/'.join(map(str, path)) or '(root)'}"
    # A valid value in a field no rule constrains is harmless: only a crash is wrong (expect "any").
    return Case(index, "hostile-field", where + f" = {raw[:24]}", [Write(rel, damaged)], resealed=True, expect="any")


def random_sweep_case(rng: random.Random, ws: Workspace, index: int) -> Case:
    return sweep_case(ws, rng.choice(field_sites(ws)), rng.choice(HOSTILE_VALUES), index)


def all_sweep_cases(ws: Workspace) -> Iterator[Case]:
    """Every (site, value) pair, in a stable order."""
    index = 0
    for site in field_sites(ws):
        for raw in HOSTILE_VALUES:
            yield sweep_case(ws, site, raw, index)
            index += 1
