"""LoadGen's mlperf_log_accuracy.json read as arrays when it is laid out as LoadGen writes it.

    entries, error = parse_accuracy_log(raw)   # AccuracyEntries, or what parse_json(raw) answers
    entries.qsl_idx, entries.data              # int64 [n]; uint8 [n, bytes per response]
    entries.as_json()                          # the list of {"seq_id", "qsl_idx", "data"} parse_json reads

LoadGen writes one entry per line, always alike:

    [
    { "seq_id" : 0, "qsl_idx" : 27022, "data" : "547C73BF" },
    ...
    { "seq_id" : 32767, "qsl_idx" : 14907, "data" : "54B31940" }
    ]

Parsed as JSON that is three Python objects and a dict per entry (a ctr-dlrm
log of 32,768 entries: 12 MiB and ~50 ms with the strict parser's checks).
A file that matches this layout exactly (one regular expression over the whole
text: integers without leading zeros and of at most 18 digits, hex strings of
one length) is read with numpy instead: the same entries as parse_json would
return, as three arrays (~0.4 MiB, a few ms). Every other file, however
slightly different (spaces, key order, an escaped character, a long
integer), goes to parse_json with all its checks, so what a file may hold and
what is refused is exactly what it was; this is a faster road to the same
answer, not a second reader. accuracy.decode_entries takes either form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from levelfield.ground.parse import parse_json

_INT = rb"(?:0|[1-9][0-9]{0,17}+)"  # JSON's integers without a sign, up to 18 digits: exact in int64
_ENTRY = rb'\{ "seq_id" : ' + _INT + rb', "qsl_idx" : ' + _INT + rb', "data" : "[0-9A-Fa-f]*+" \}'
# Possessive repeats (*+): nothing in the layout is ever given back, and keeping no backtracking state makes
# the match ~17% cheaper (5 ms for 32,768 entries). A numpy test of the same layout was slower (~15 ms:
# a table lookup and a running sum over every byte).
LOADGEN_LAYOUT = re.compile(rb"\[\n(?:" + _ENTRY + rb",\n)*+" + _ENTRY + rb"\n\]\n?")
_QUOTE, _ZERO = ord('"'), ord("0")
QUOTES_PER_ENTRY = 8  # "seq_id", "qsl_idx", "data" and the data string: two each
# Hex digit -> its value (both cases, as JSON's data strings may use either); the layout admits no other byte.
_NIBBLE = np.zeros(256, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _NIBBLE[_c] = 10 + _i


@dataclass(frozen=True, eq=False)
class AccuracyEntries:
    """The entries of an accuracy log, in file order: seq_id and qsl_idx as int64, each response's bytes."""

    seq_id: np.ndarray  # int64 [n]
    qsl_idx: np.ndarray  # int64 [n]
    data: np.ndarray  # uint8 [n, bytes per response], decoded from the hex strings

    def __post_init__(self):
        for array in (self.seq_id, self.qsl_idx, self.data):
            array.flags.writeable = False  # shared by every check that reads the run, as a parsed list is

    def __len__(self) -> int:
        return len(self.qsl_idx)

    def __eq__(self, other: object) -> bool:
        """Equal entries, as two parses of the same file compare (the fuzzer's reuse verifies that)."""
        if not isinstance(other, AccuracyEntries):
            return NotImplemented
        return all(np.array_equal(a, b) for a, b in zip(self._arrays(), other._arrays(), strict=True))

    __hash__ = None  # mutable-looking like a list: not a dict key

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.seq_id, self.qsl_idx, self.data

    def as_json(self) -> list[dict]:
        """The list of {"seq_id", "qsl_idx", "data"} dicts that parse_json reads from the same file, except that
        `data` is in upper case (accuracy.decode_entries compares it in upper case)."""
        hexes = self.data.tobytes().hex().upper()
        width = 2 * self.data.shape[1]
        return [
            {"seq_id": int(s), "qsl_idx": int(q), "data": hexes[i * width : (i + 1) * width]}
            for i, (s, q) in enumerate(zip(self.seq_id.tolist(), self.qsl_idx.tolist(), strict=True))
        ]


def parse_accuracy_log(raw: bytes) -> tuple[Any, str | None]:
    """(AccuracyEntries, None) for a log in LoadGen's layout; otherwise parse_json(raw)'s answer."""
    entries = loadgen_layout(raw)
    return (entries, None) if entries is not None else parse_json(raw)


def loadgen_layout(raw: bytes) -> AccuracyEntries | None:
    """The entries of a log in LoadGen's layout exactly; None for any other text."""
    if not raw.startswith(b"[\n{") or LOADGEN_LAYOUT.fullmatch(raw) is None:
        return None
    text = np.frombuffer(raw, dtype=np.uint8)
    quotes = np.flatnonzero(text == _QUOTE).reshape(-1, QUOTES_PER_ENTRY)
    # Inside one entry: `{ "seq_id" : S, "qsl_idx" : Q, "data" : "H" }`, quotes at q0..q7:
    # S spans q1+4 .. q2-2, Q spans q3+4 .. q4-2, H spans q6+1 .. q7.
    hex_start, hex_end = quotes[:, 6] + 1, quotes[:, 7]
    width = hex_end - hex_start
    if (width != width[0]).any() or width[0] % 2:  # the layout holds one entry at least
        return None  # responses of different sizes (or half a byte): left to parse_json and the per-entry checks
    digits = text[hex_start[:, None] + np.arange(width[0])]
    data = (_NIBBLE[digits[:, 0::2]] << 4) | _NIBBLE[digits[:, 1::2]]
    seq = _integers(text, quotes[:, 1] + 4, quotes[:, 2] - 2)
    qsl = _integers(text, quotes[:, 3] + 4, quotes[:, 4] - 2)
    return AccuracyEntries(seq, qsl, data)


def _integers(text: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The decimal integers at text[start:end] per row (the layout guarantees 1-18 digits each), as int64."""
    lengths = end - start
    out = np.zeros(len(start), dtype=np.int64)
    for place in range(int(lengths.max(initial=0))):  # units, tens, ...: one pass per digit position
        has = lengths > place
        digit = text[np.where(has, end - 1 - place, 0)].astype(np.int64) - _ZERO
        out += np.where(has, digit, 0) * 10**place
    return out
