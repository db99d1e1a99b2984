"""Hostile values in every field: the systematic complement of the random classes.

    fields = field_sites(ws)                 # one site per distinct field of the example's files
    case = sweep_case(ws, fields[12], HOSTILE_VALUES[0], index=0)

A site is a JSON field (by the file's role and the path) or an MLLOG field (by
the log's role, the key and the path inside the line), down to four levels,
lists cut to their first two items, each counted once however many files or
lines hold it. A file's role is its path below <task>/<framework>/ with
run_<i> and result_<i> as N (`offline/performance/run_N/mlperf_log_detail.txt`),
so an accuracy run's files and a performance run's are different sites. Each
hostile value replaces the field and the MANIFEST is resealed, so the value
reaches every check that reads the field; the classified field table
(fields.py) says whether the checker must then report it. Random inputs of
the class `hostile-field` draw one site and one value; `--sweep` runs every pair.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Iterator
from typing import Any

from levelfield.ground import layout as L
from levelfield.ground.parse import MLLOG_PREFIX, parse_json_text
from levelfield.tools.fuzz import mutate as M
from levelfield.tools.fuzz.case import Case
from levelfield.tools.fuzz.fields import DROPPED, SHAPE_CODES, classify, judge, same
from levelfield.tools.fuzz.workspace import Workspace, Write

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


def role(rel: str) -> str:
    """The file's place in any tree: `offline/performance/run_N/mlperf_log_detail.txt`, `code/levelfield.json`,
    `systems/<system>.json`, `training/result_N.txt`."""
    parts = rel.split("/")
    if len(parts) > 6 and parts[2] == L.RESULTS:  # <division>/<org>/results/<system>/<task>/<framework>/...
        place = "/".join(parts[6:])
    elif len(parts) > 3 and parts[2] == L.SYSTEMS:
        place = f"{L.SYSTEMS}/<system>.json"
    else:
        place = "/".join(parts[2:]) or rel
    return re.sub(r"\bresult_\d+\.txt$", "result_N.txt", re.sub(r"\brun_\d+\b", "run_N", place))


def field_label(ws: Workspace, site: tuple) -> str:
    """How the classified field table (fields.py) names a site: role, MLLOG key, path."""
    rel, line_index, path = site
    where = "/".join(map(str, path)) or "(root)"
    if line_index is None:
        return f"{role(rel)} {where}"
    return f"{role(rel)} {_entry(ws, rel, line_index)['key']} {where}"


def _entry(ws: Workspace, rel: str, line_index: int) -> dict:
    return json.loads(ws.base_files[rel].decode("utf-8").split("\n")[line_index][len(MLLOG_PREFIX) :])


def field_sites(ws: Workspace) -> list[tuple[str, int | None, tuple]]:
    """(file, MLLOG line index or None, path) of each distinct field, in a stable order."""
    if id(ws) not in _SITES:
        seen, sites = set(), []
        for rel, data in sorted(ws.base_files.items()):
            kind = M.file_kind(rel)
            if kind == M.JSON:
                for path in _paths(json.loads(data)):
                    if (role(rel), path) not in seen:
                        seen.add((role(rel), path))
                        sites.append((rel, None, path))
            elif kind == M.MLLOG:
                for i, line in enumerate(data.decode("utf-8").split("\n")):
                    if not line.startswith(MLLOG_PREFIX):
                        continue
                    entry = json.loads(line[len(MLLOG_PREFIX) :])
                    for path in _paths(entry):
                        # the key names the line; file and lineno only locate the logging call
                        if path[:1] == ("key",) or path[:2] in (("metadata", "file"), ("metadata", "lineno")):
                            continue
                        if (role(rel), entry["key"], path) not in seen:
                            seen.add((role(rel), entry["key"], path))
                            sites.append((rel, i, path))
        _SITES[id(ws)] = sites
    return _SITES[id(ws)]


def expectation(label: str, original: Any, raw: str, *, finite: bool) -> tuple[str, frozenset[str]]:
    """What the checker must say when the field named `label` is given the raw JSON text `raw` (in a JSON
    document when `finite`, which refuses NaN and infinities; in an MLLOG line, which keeps them)."""
    new, error = parse_json_text(raw, finite=finite)
    if error:  # 1e999 in a JSON file, a 400-digit integer: the file can no longer be read as levelfield writes it
        return "fail", SHAPE_CODES
    return judge(classify(label), original, new)


def _with_raw(doc: Any, path: tuple, raw: str, indent: int | None) -> str:
    if not path:
        return raw
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = _MARK
    return json.dumps(doc, indent=indent).replace(json.dumps(_MARK), raw, 1)


def _lenient(text: str) -> tuple[Any, bool]:
    """(value, True) as Python's json reads it (NaN, 1e999 and long integers included), or (None, False)."""
    try:
        return json.loads(text), True
    except ValueError:  # e.g. an integer of more than 4,300 digits
        return None, False


def _difference(old: Any, new: Any, path: tuple = ()) -> tuple[tuple, Any] | None:
    """(path, new value or fields.DROPPED) of the one place where two JSON values differ, or None."""
    if isinstance(old, dict) and isinstance(new, dict):
        dropped = [k for k in old if k not in new]
        if dropped:
            return path + (dropped[0],), DROPPED
        for key in new:
            if key not in old:
                return path + (key,), new[key]
            found = _difference(old[key], new[key], path + (key,))
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found = _difference(a, b, path + (i,))
            if found is not None:
                return found
        return None
    return None if same(old, new) else (path, new)


def edit_expectation(rel: str, before: bytes, after: bytes) -> tuple[str, frozenset[str]]:
    """What the checker must say about a resealed value-level edit of one JSON document or MLLOG line
    (a random content class): the edited field is found by comparing the two versions and judged
    by the classified field table like a hostile value."""
    kind = M.file_kind(rel)
    try:
        if kind == M.GZIP_JSON:
            before, after = gzip.decompress(before), gzip.decompress(after)
        text = after.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError):  # a broken stream or bytes that are not UTF-8
        return "fail", SHAPE_CODES
    key = None
    if kind == M.MLLOG:
        old_lines, new_lines = before.decode("utf-8").split("\n"), text.split("\n")
        changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)) if a != b]
        if len(old_lines) != len(new_lines) or len(changed) != 1 or not new_lines[changed[0]].startswith(MLLOG_PREFIX):
            # Lines dropped, added or swapped, or one that is no longer an MLLOG line (MLPerf allows other
            # lines): the key-count and order checks judge those, and not every line is required.
            return "any", frozenset()
        old_doc = json.loads(old_lines[changed[0]][len(MLLOG_PREFIX) :])
        key, text = old_doc["key"], new_lines[changed[0]][len(MLLOG_PREFIX) :]
    else:
        old_doc = json.loads(before)
    new_doc, readable = _lenient(text)
    if not readable or parse_json_text(text, finite=kind != M.MLLOG)[1]:  # the checker's parser refuses it
        return "fail", SHAPE_CODES
    found = _difference(old_doc, new_doc)
    if found is None:
        return "any", frozenset()
    path, new = found
    existed, original = _lookup(old_doc, path)
    if not existed:
        return "any", frozenset()  # a key levelfield does not write: no check reads it
    where = "/".join(map(str, path)) or "(root)"
    label = f"{role(rel)} {where}" if key is None else f"{role(rel)} {key} {where}"
    return judge(classify(label), original, new)


def _lookup(node: Any, path: tuple) -> tuple[bool, Any]:
    """(True, the value at `path`) or (False, None) when the document has no such place."""
    for key in path:
        in_object = isinstance(node, dict) and key in node
        in_array = isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node)
        if not (in_object or in_array):
            return False, None
        node = node[key]
    return True, node


def sweep_case(ws: Workspace, site: tuple, raw: str, index: int) -> Case:
    rel, line_index, path = site
    data = ws.base_files[rel]
    original = _get(json.loads(data) if line_index is None else _entry(ws, rel, line_index), path)
    expect, codes = expectation(field_label(ws, site), original, raw, finite=line_index is None)
    if line_index is None:
        damaged = _with_raw(json.loads(data), path, raw, 2).encode("utf-8")
    else:
        lines = data.decode("utf-8").split("\n")
        lines[line_index] = MLLOG_PREFIX + _with_raw(
            json.loads(lines[line_index][len(MLLOG_PREFIX) :]), path, raw, None
        )
        damaged = "\n".join(lines).encode("utf-8")
    where = f"{rel}{'' if line_index is None else f' line {line_index + 1}'} {'/'.join(map(str, path)) or '(root)'}"
    edits = [Write(rel, damaged)]
    return Case(index, "hostile-field", where + f" = {raw[:24]}", edits, resealed=True, expect=expect, codes=codes)


def _get(node: Any, path: tuple) -> Any:
    for key in path:
        node = node[key]
    return node


def random_sweep_case(rng: random.Random, ws: Workspace, index: int) -> Case:
    return sweep_case(ws, rng.choice(field_sites(ws)), rng.choice(HOSTILE_VALUES), index)


def all_sweep_cases(ws: Workspace) -> Iterator[Case]:
    """Every (site, value) pair, in a stable order."""
    index = 0
    for site in field_sites(ws):
        for raw in HOSTILE_VALUES:
            yield sweep_case(ws, site, raw, index)
            index += 1
