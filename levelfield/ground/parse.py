"""Parsers for the files of a submission: strict, bounded, and never raising on bad input.

    lines, errors = parse_mllog(text)    # [MllogLine], [(lineno, message)]
    data, error = parse_json(raw)        # (object, None) or (None, "why")

Every parser returns what it could read plus a description of what it could
not; the loader turns the latter into findings. Duplicate JSON keys are an
error (the second silently winning is how a tampered value hides), nesting is
capped, numbers must fit a double (JSON files: finite ones), and MLLOG lines
longer than a limit are refused rather than parsed.
"""

from __future__ import annotations

import json
import math
import sys
import zlib
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

MLLOG_PREFIX = ":::MLLOG "
# LoadGen's loaded_qsl_set line lists every performance sample index (ctr-dlrm: 32768 of them, ~200 KB).
MAX_LINE_CHARS = 8 * 1024 * 1024
MAX_GUNZIP_BYTES = 256 * 1024 * 1024  # a compressed accuracy log of rules 1.0 inflates to a few MB
MAX_JSON_DEPTH = 64  # our files nest 4-5 levels
# A run of digits as long as the largest double (1.8e308) has: only then can a JSON integer be too large.
# Searched as bytes with every ASCII digit mapped to "0" and anything else to "x": ~8x faster than the
# regex [0-9]{309} on an accuracy log, whose hex data is mostly short digit runs the regex retried.
_DIGIT_MAP = bytes(ord("0") if chr(b).isascii() and chr(b).isdigit() else ord("x") for b in range(256))
_LONG_DIGITS = b"0" * 309


def _has_long_digits(text: str) -> bool:
    return _LONG_DIGITS in text.encode("utf-8", "surrogatepass").translate(_DIGIT_MAP)


@dataclass(slots=True)
class MllogLine:
    lineno: int
    key: str
    value: Any
    metadata: dict
    time_ms: float | None
    event_type: str | None


@dataclass
class MllogFile:
    path: str
    lines: list[MllogLine] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)
    interleaved: list[int] = field(default_factory=list)  # read_interleaved: lines with text before :::MLLOG

    def all(self, key: str) -> list[MllogLine]:
        return [line for line in self.lines if line.key == key]

    def first(self, key: str) -> MllogLine | None:
        return next((line for line in self.lines if line.key == key), None)

    def last(self, key: str) -> MllogLine | None:
        found = self.all(key)
        return found[-1] if found else None

    def value(self, key: str, default: Any = None) -> Any:
        line = self.first(key)
        return default if line is None else line.value

    def values(self) -> dict:
        """{key: value} with the last line of each key winning (LoadGen's detail log semantics)."""
        return {line.key: line.value for line in self.lines}


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs):
    out = dict(pairs)  # in C; only when a key repeats is the list searched for it in Python
    if len(out) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"duplicate key {key!r}")
            seen.add(key)
    return out


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a parsed JSON value, stopping at `limit` + 1 (only containers are visited).

    Level by level, with the per-item work in comprehensions and itertools: an accuracy log is
    a list of tens of thousands of flat objects, and a per-item Python loop cost ~4x as much.
    json.loads makes exactly dict and list, so an exact class test is enough.
    """
    level = [value] if value.__class__ is dict or value.__class__ is list else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return depth
        children = chain.from_iterable(item.values() if item.__class__ is dict else item for item in level)
        level = [child for child in children if child.__class__ is dict or child.__class__ is list]
    return depth


def decode(raw: bytes) -> tuple[str | None, str | None]:
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 text (invalid byte at offset {e.start})"


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 reads as inf
        raise ValueError(f"number {text[:40]} is beyond the range of a double")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _bounded_int(text: str) -> int:
    value = int(text)
    if abs(value) > sys.float_info.max:
        raise ValueError(f"integer of {len(text.lstrip('-'))} digits is beyond the range of a double")
    return value


def parse_json_text(text: str, *, finite: bool = False) -> tuple[Any, str | None]:
    """(value, None) or (None, why). Integers beyond a double's range are refused everywhere: no writer
    of levelfield's files produces one, and every check's arithmetic (float(), math.isclose) would
    overflow on it. finite=True also refuses NaN, Infinity and overflowing floats (levelfield's JSON
    files; MLLOG lines keep them, as mlperf_logging writes a diverged value as NaN)."""
    return _parse_text(text, finite, _has_long_digits(text))


def _parse_text(text: str, finite: bool, long_digits: bool) -> tuple[Any, str | None]:
    """parse_json_text, told whether `text` may hold a run of digits as long as the largest double's
    (`long_digits`: False only when a search of the text, or of a file holding it, found none)."""
    try:
        data = _DECODERS[finite, False].decode(text)
        if long_digits:  # rare, so only then is every integer parsed through Python
            _DECODERS[finite, True].decode(text)
    except _DuplicateKey as e:
        return None, f"invalid JSON: {e}"
    except RecursionError:  # a nesting bomb: the C parser stops at the interpreter's recursion limit
        return None, _TOO_DEEP
    except ValueError as e:
        return None, f"invalid JSON: {str(e)[:200]}"
    # Fewer brackets than the limit cannot nest deeper than it (every MLLOG line): no walk needed.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(data, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        return None, _TOO_DEEP
    return data, None


_TOO_DEEP = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"


def _decoder(finite: bool, bounded_int: bool) -> json.JSONDecoder:
    options = {"object_pairs_hook": _no_duplicates}
    if finite:
        options.update(parse_float=_finite_float, parse_constant=_no_constant)
    if bounded_int:
        options["parse_int"] = _bounded_int
    return json.JSONDecoder(**options)


# Built once: json.loads with any option builds a new JSONDecoder per call, ~5% of checking an MLLOG log.
_DECODERS = {(finite, bounded): _decoder(finite, bounded) for finite in (False, True) for bounded in (False, True)}


def gunzip(raw: bytes, limit: int = MAX_GUNZIP_BYTES) -> tuple[bytes | None, str | None]:
    """Inflate gzip data, refusing more than `limit` bytes of output (a gzip bomb stops here)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(raw, limit + 1)
    except zlib.error as e:
        return None, f"not valid gzip data ({e})"
    if len(data) > limit or inflater.unconsumed_tail:
        return None, f"inflates to more than {limit} bytes"
    if not inflater.eof or inflater.unused_data:
        return None, "gzip data truncated or followed by extra bytes"
    return data, None


def parse_json(raw: bytes) -> tuple[Any, str | None]:
    text, error = decode(raw)
    if error:
        return None, error
    return parse_json_text(text, finite=True)


def parse_mllog(raw: bytes, path: str, *, read_interleaved: bool = False) -> MllogFile:
    """Every `:::MLLOG {json}` line; other lines are ignored (MLPerf allows them), broken ones reported.

    An MLLOG line that another process's output precedes on the same line (`[:::MLLOG {...}`, raw
    stdout of published MLCommons logs) is an error, unless `read_interleaved`: then its MLLOG part is
    read, as mlperf_logging's parser reads it, and its line number kept in `interleaved`."""
    global _LAST_PARSED
    out = MllogFile(path)
    text, error = decode(raw)
    if error:
        out.errors.append((0, error))
        return out
    # One search of the whole file instead of one per line: a line can hold a run of 309 digits only
    # if the file does (a detail log's ~100 lines cost ~15% less to read).
    long_digits = _has_long_digits(text)
    parsed = []  # (lineno, object) of every line that starts with the token and parses: mllog_objects()
    # Lines end at "\n" (what editors and the writers count); str.splitlines() would also break a line at
    # "\r", "\x1c" or U+2028, which are legal inside a JSON string, and shift every later line number.
    for lineno, line in enumerate(text.split("\n"), start=1):
        starts = line.startswith(MLLOG_PREFIX)
        if not starts:
            if read_interleaved and MLLOG_PREFIX in line:
                out.interleaved.append(lineno)
                line = line[line.index(MLLOG_PREFIX) :]
            else:
                if ":::MLLOG" in line:
                    out.errors.append((lineno, "an MLLOG line that does not start at the beginning of the line"))
                continue
        if len(line) > MAX_LINE_CHARS:
            out.errors.append((lineno, f"line of {len(line)} characters (limit {MAX_LINE_CHARS})"))
            continue
        payload = line[_PREFIX_CHARS:]
        entry = _scan_object(payload) if not long_digits else None
        if entry is None:  # not a plain object line, or not one at all: the full parse, and its word for why
            entry, problem = _parse_text(payload, False, long_digits)
            if problem:
                out.errors.append((lineno, problem))
                continue
        if starts and entry.__class__ is dict:
            parsed.append((lineno, entry))
        if entry.__class__ is not dict or entry.get("key").__class__ is not str:
            out.errors.append((lineno, "an MLLOG line without a string 'key'"))
            continue
        logged_ms = entry.get("time_ms")
        time_ms = logged_ms if logged_ms.__class__ is float and math.isfinite(logged_ms) else _finite(logged_ms)
        if time_ms is None and logged_ms is not None:  # 1e999, NaN, a 400-digit integer, "12"
            out.errors.append((lineno, "time_ms is not a finite number of milliseconds"))
            continue
        metadata, event_type = entry.get("metadata"), entry.get("event_type")
        out.lines.append(
            MllogLine(
                lineno,
                entry["key"],
                entry.get("value"),
                metadata if metadata.__class__ is dict else {},
                time_ms,
                event_type if event_type.__class__ is str else None,
            )
        )
    _LAST_PARSED = (raw, parsed)
    return out


_SCAN = _DECODERS[False, False].scan_once  # the C scanner behind json.loads: one value at an index


def _scan_object(payload: str) -> dict | None:
    """The object a line's payload is, when it is exactly one JSON object with nothing around it and no
    deeper than the limit allows (every line LoadGen or mllog writes); None for anything else, which
    _parse_text then reads (its answer for such a payload is the same object, or why there is none)."""
    if not payload.startswith("{") or not payload.endswith("}"):
        return None
    try:
        entry, end = _SCAN(payload, 0)
    except (StopIteration, ValueError, RecursionError):  # _DuplicateKey is a ValueError
        return None
    if end != len(payload) or payload.count("[") + payload.count("{") > MAX_JSON_DEPTH:
        return None
    return entry


_PREFIX_CHARS = len(MLLOG_PREFIX)
# The parsed objects of the MLLOG file read last, kept so that checking the same bytes' shapes
# (shapes.shape_problems, right after the loader's parse_mllog) does not parse every line again.
_LAST_PARSED: tuple[bytes, list[tuple[int, dict]]] | None = None


def mllog_objects(raw: bytes) -> list[tuple[int, dict]] | None:
    """(line number, parsed JSON object) of every line of `raw` that starts with `:::MLLOG ` (within the line
    limit) and parses into an object, in order; None when `raw` is not UTF-8. A pure function of `raw`:
    answered without parsing again when `raw` is the object parse_mllog read last."""
    last = _LAST_PARSED
    if last is None or last[0] is not raw:
        if decode(raw)[1]:
            return None
        parse_mllog(raw, "")
        last = _LAST_PARSED
    return last[1]


def _finite(value: Any) -> float | None:
    """`value` as a finite float, or None (bools, strings, NaN, Inf and integers beyond float's range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


# -- what a parsed value is: the checks compare logged values, which may hold anything a file can ------
def finite_number(value: object) -> bool:
    """A real, finite int or float (not a bool, not NaN or infinity): what a logged number must be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def plain_int(value: object) -> bool:
    """An int that is not a bool (JSON's true is not 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def same_value(a: object, b: object, rel_tol: float) -> bool:
    """Two parsed values say the same: ints exactly (19-digit seeds), numbers with a float among them
    within rel_tol, objects and arrays member by member by these rules (Python's == inside a dict takes
    false for 0), anything else equal and of one type."""
    if finite_number(a) and finite_number(b) and (isinstance(a, float) or isinstance(b, float)):
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k], rel_tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y, rel_tol) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
