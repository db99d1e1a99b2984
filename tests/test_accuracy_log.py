"""LoadGen's accuracy-log layout read as arrays (ground/accuracy_log.py) answers as the JSON parse does.

Every log below goes both ways: parse_accuracy_log -> decode_entries, and parse_json -> decode_entries
(the per-entry checks). The rows, or the error message word for word, must be the same; a log that is
not exactly in LoadGen's layout must not be read as arrays at all. (About a second.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from levelfield.ground.accuracy import decode_entries
from levelfield.ground.accuracy_log import AccuracyEntries, parse_accuracy_log
from levelfield.ground.parse import gunzip, parse_json

EXAMPLE = Path(__file__).resolve().parents[1] / "submissions" / "example"
TASK, N = "ctr-dlrm", 16  # one float32 score per sample


def _layout(entries: list[tuple]) -> bytes:
    """A log as LoadGen writes it, from (seq_id, qsl_idx, data) triples given as text."""
    lines = [f'{{ "seq_id" : {s}, "qsl_idx" : {q}, "data" : "{d}" }}' for s, q, d in entries]
    return ("[\n" + ",\n".join(lines) + "\n]\n").encode()


def _rows(n: int = N) -> list[tuple]:
    """A whole log of n samples answered in a shuffled order, each a distinct float32."""
    order = np.random.default_rng(0).permutation(n)
    return [(i, int(q), np.float32(q / n).tobytes().hex().upper()) for i, q in enumerate(order)]


def _both_ways(raw: bytes, n: int = N) -> tuple[object, object]:
    """(rows or error) through the array reader and through the JSON parse."""

    def outcome(parsed):
        entries, error = parsed
        if error:
            return ("unparsed", error)
        try:
            return decode_entries(entries, TASK, n, source="log").tolist()
        except ValueError as e:
            return ("error", str(e))

    return outcome(parse_accuracy_log(raw)), outcome(parse_json(raw))


def test_the_example_logs_read_as_arrays_equal_the_json_parse():
    logs = sorted(EXAMPLE.rglob("mlperf_log_accuracy.json.gz"))
    assert logs
    for path in logs:
        raw, _ = gunzip(path.read_bytes())
        fast, _ = parse_accuracy_log(raw)
        assert isinstance(fast, AccuracyEntries)
        slow, _ = parse_json(raw)
        assert fast.as_json() == [{**e, "data": e["data"].upper()} for e in slow]
        n = len(slow)
        assert np.array_equal(decode_entries(fast, TASK, n), decode_entries(slow, TASK, n))


def _swap(rows, i, **changes):
    out = list(rows)
    seq, qsl, data = out[i]
    out[i] = (changes.get("seq", seq), changes.get("qsl", qsl), changes.get("data", data))
    return out


CASES = {
    "whole": lambda r: r,
    "lower-case hex": lambda r: [(s, q, d.lower()) for s, q, d in r],
    "a sample answered twice alike": lambda r: r + [(len(r), r[3][1], r[3][2])],
    "a sample answered twice otherwise": lambda r: r + [(len(r), r[3][1], r[4][2])],
    "a sample missing": lambda r: r[:-1],
    "qsl_idx out of range": lambda r: _swap(r, 5, qsl=N),
    "a response too short": lambda r: _swap(r, 2, data="ABCD"),
    "every response too long": lambda r: [(s, q, d + "00") for s, q, d in r],
    "odd hex digits": lambda r: _swap(r, 1, data="ABCDEF0"),
    "a leading zero": lambda r: _swap(r, 6, seq="07"),
    "a 19-digit seq_id": lambda r: _swap(r, 6, seq="1" * 19),
    "a negative qsl_idx": lambda r: _swap(r, 6, qsl=-1),
    "a non-hex digit": lambda r: _swap(r, 6, data="ABCDEFGH"),
    "one entry only": lambda r: r[:1],
}


# Cases still in LoadGen's layout, so read as arrays: the arrays' own checks must refuse what the
# per-entry checks refuse (and hand over to them for the message).
AS_ARRAYS = {
    "whole",
    "lower-case hex",
    "a sample answered twice alike",
    "a sample answered twice otherwise",
    "a sample missing",
    "qsl_idx out of range",
    "every response too long",
    "one entry only",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_case_answers_alike(case):
    raw = _layout(CASES[case](_rows()))
    assert isinstance(parse_accuracy_log(raw)[0], AccuracyEntries) == (case in AS_ARRAYS)
    fast, slow = _both_ways(raw)
    assert fast == slow
    assert case != "whole" or isinstance(fast, list)  # the whole log scores; the others may not


@pytest.mark.parametrize(
    "text",
    [
        b'[\n{ "seq_id" : 0, "qsl_idx" : 0, "data" : "00" }\n]',  # no final newline: still LoadGen's
        b'[\n{ "seq_id" : 0,  "qsl_idx" : 0, "data" : "00" }\n]\n',  # a second space
        b'[\n{ "qsl_idx" : 0, "seq_id" : 0, "data" : "00" }\n]\n',  # keys in another order
        b'[\n{ "seq_id" : 0, "qsl_idx" : 0, "data" : "00", "data" : "01" }\n]\n',  # a duplicate key
        b'[\n{ "seq_id" : 0, "qsl_idx" : 0, "data" : "00" },\n]\n',  # a trailing comma
        b"[\n]\n",  # no entry
    ],
)
def test_only_loadgens_exact_layout_is_read_as_arrays(text):
    fast, error = parse_accuracy_log(text)
    as_json = parse_json(text)
    if text.startswith(b'[\n{ "seq_id" : 0, "qsl_idx" : 0, "data" : "00" }\n]') and error is None:
        assert isinstance(fast, AccuracyEntries) and fast.as_json() == as_json[0]
    else:
        assert (fast, error) == as_json  # parse_json's answer, whatever it is


def test_entries_are_read_only_and_compare_by_value():
    raw = _layout(_rows())
    one, _ = parse_accuracy_log(raw)
    two, _ = parse_accuracy_log(raw)
    assert one == two and one is not two
    with pytest.raises(ValueError):
        one.qsl_idx[0] = 1
