"""Content defect classes: one file's bytes in, the damaged bytes out.

    kinds = classes_for(file_kind(rel))              # the classes that apply to this file
    damaged = mutate(rng, rel, data, "duplicate-key")  # bytes

A file's kind decides how it is damaged: JSON documents and MLLOG lines get
value-level damage (`jsonfuzz.py`), LoadGen's gzip-compressed accuracy log is
damaged inside and recompressed (so the JSON parser, not only gzip's CRC, is
exercised) or as a stream (bombs, truncation), text files and the MANIFEST
get byte and line damage. Every class states whether it is *structural*: the
damaged file can never be read as valid, so the checker must report it even
when the MANIFEST is resealed around it.
"""

from __future__ import annotations

import functools
import gzip
import json
import random
import zlib

from levelfield.ground import layout as L
from levelfield.ground.parse import MAX_GUNZIP_BYTES, MAX_LINE_CHARS, MLLOG_PREFIX
from levelfield.tools.fuzz.jsonfuzz import JSON_CLASSES, mutate_value

JSON, MLLOG, GZIP_JSON, TEXT, MANIFEST = "json", "mllog", "gzip-json", "text", "manifest"

INVALID_UTF8 = (b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80", b"\xe2\x82")

# class -> structural (must be found even when the MANIFEST is resealed)
BYTE_CLASSES = {
    "empty": True,
    "truncate": False,
    "flip-byte": False,
    "non-utf8": True,
    "nul-bytes": False,
    "append-garbage": False,
}
LINE_CLASSES = {"drop-line": False, "duplicate-line": False, "swap-lines": False}
MLLOG_CLASSES = {
    "mllog-truncated-line": True,
    "mllog-indented": True,
    "mllog-long-line": False,
    "mllog-over-long-line": True,
}
GZIP_CLASSES = {"gzip-bomb": True, "gzip-truncated": True, "gzip-trailing-garbage": True, "gzip-flip": False}
# MANIFEST paths that point outside the tree or are not plain: each must be STR008.
UNSAFE_PATHS = {
    "manifest-dotdot": "../{secret}",
    "manifest-absolute": "{secret_abs}",
    "manifest-backslash": "closed\\..\\..\\{secret}",
    "manifest-dot": "./MANIFEST2",
    "manifest-empty-part": "closed//levelfield",
    "manifest-control-char": "closed/le\x07vel",
    "manifest-self": "MANIFEST",
}
MANIFEST_CLASSES = dict.fromkeys(UNSAFE_PATHS, True)

APPLIES = {
    JSON: {**BYTE_CLASSES, **JSON_CLASSES},
    MLLOG: {**BYTE_CLASSES, **LINE_CLASSES, **JSON_CLASSES, **MLLOG_CLASSES},
    # inside the compressed document (recompressed), or the compressed stream itself
    GZIP_JSON: {**BYTE_CLASSES, **JSON_CLASSES, **GZIP_CLASSES},
    TEXT: {**BYTE_CLASSES, **LINE_CLASSES},
    MANIFEST: {**BYTE_CLASSES, **LINE_CLASSES, **MANIFEST_CLASSES},
}
# Structural for this kind only: appended bytes break a JSON document, but after an MLLOG or text
# file's last newline they are one more non-MLLOG line, which MLPerf's format allows.
STRUCTURAL_FOR = {(JSON, "append-garbage"), (GZIP_JSON, "append-garbage")}
# Not structural for this kind: the accuracy run's mlperf_log_summary.txt is LoadGen's note for people
# ("No errors encountered during test."); no rule reads it, so an empty one is not a defect.
NOT_STRUCTURAL_FOR = {(TEXT, "empty")}


def file_kind(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    if rel == L.MANIFEST:
        return MANIFEST
    if name == L.ACCURACY_LOG_STORED:
        return GZIP_JSON
    if name.endswith(".json"):
        return JSON
    if name == "mlperf_log_detail.txt" or L.TRAINING_LOG.match(name):
        return MLLOG
    return TEXT


def classes_for(kind: str) -> dict[str, bool]:
    """{class: structural} for a file of this kind."""
    return {
        name: (structural or (kind, name) in STRUCTURAL_FOR) and (kind, name) not in NOT_STRUCTURAL_FOR
        for name, structural in APPLIES[kind].items()
    }


def mutate(rng: random.Random, rel: str, data: bytes, cls: str, *, secret: str = "", secret_abs: str = "") -> bytes:
    """The file's damaged bytes (always different from `data`)."""
    kind = file_kind(rel)
    if kind == GZIP_JSON and cls not in GZIP_CLASSES:
        inner = _mutate_plain(rng, GZIP_JSON, gzip.decompress(data), cls, secret, secret_abs)
        out = gzip.compress(inner, compresslevel=1, mtime=0)
    elif cls in GZIP_CLASSES:
        out = _mutate_gzip(rng, data, cls)
    else:
        out = _mutate_plain(rng, kind, data, cls, secret, secret_abs)
    if out == data:  # e.g. a byte flip inside gzip's header that changes nothing gunzip reads: still a change
        out = data + b"\n"
    return out


def _mutate_plain(rng, kind, data: bytes, cls: str, secret: str, secret_abs: str) -> bytes:
    if cls in BYTE_CLASSES:
        return _mutate_bytes(rng, data, cls)
    if cls in LINE_CLASSES:
        return _mutate_lines(rng, data, cls)
    if cls in UNSAFE_PATHS:
        path = UNSAFE_PATHS[cls].format(secret=secret, secret_abs=secret_abs)
        return data + f"{rng.getrandbits(256):064x}  {path}\n".encode()
    if cls in MLLOG_CLASSES:
        return _mutate_mllog_line(rng, data, cls)
    if kind == MLLOG:  # a value-level class, applied to one line's JSON
        lines = data.decode("utf-8").splitlines(keepends=True)
        index = _mllog_line(rng, lines)
        entry = json.loads(lines[index][len(MLLOG_PREFIX) :])
        lines[index] = MLLOG_PREFIX + mutate_value(rng, entry, cls) + "\n"
        return "".join(lines).encode("utf-8")
    text = mutate_value(rng, json.loads(data), cls, indent=2 if kind == JSON else None)
    return text.encode("utf-8", "surrogatepass")


def _mutate_bytes(rng: random.Random, data: bytes, cls: str) -> bytes:
    at = rng.randrange(len(data) + 1)
    if cls == "empty" or not data:
        return b"" if data else b"\x00"
    if cls == "truncate":
        return data[: rng.randrange(len(data))]
    if cls == "flip-byte":
        at = rng.randrange(len(data))
        return data[:at] + bytes([data[at] ^ rng.randrange(1, 256)]) + data[at + 1 :]
    if cls == "non-utf8":
        return data[:at] + rng.choice(INVALID_UTF8) + data[at:]
    if cls == "nul-bytes":
        return data[:at] + b"\x00" * rng.randrange(1, 64) + data[at:]
    return data + bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 512)))  # append-garbage


def _mutate_lines(rng: random.Random, data: bytes, cls: str) -> bytes:
    lines = data.splitlines(keepends=True)
    if len(lines) < 2:
        return data + data[-1:] if data else b"\n"
    i = rng.randrange(len(lines))
    if cls == "drop-line":
        del lines[i]
    elif cls == "duplicate-line":
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    else:
        j = rng.randrange(len(lines))
        j = j if lines[j] != lines[i] else (i + 1) % len(lines)
        lines[i], lines[j] = lines[j], lines[i]
    out = b"".join(lines)
    return out if out != data else data + lines[i]


def _mllog_line(rng: random.Random, lines: list[str]) -> int:
    candidates = [i for i, line in enumerate(lines) if line.startswith(MLLOG_PREFIX)]
    return rng.choice(candidates)


def _mutate_mllog_line(rng: random.Random, data: bytes, cls: str) -> bytes:
    lines = data.decode("utf-8").splitlines(keepends=True)
    i = _mllog_line(rng, lines)
    body = lines[i].rstrip("\n")
    if cls == "mllog-truncated-line":  # cut inside the JSON, as a crash mid-write leaves it
        lines[i] = body[: rng.randrange(len(MLLOG_PREFIX) + 1, len(body) - 1)] + "\n"
    elif cls == "mllog-indented":
        lines[i] = rng.choice((" ", "\t", "x", "\ufeff")) + lines[i]
    else:  # one line far longer than any honest one (over the parser's limit for the over-long class)
        size = MAX_LINE_CHARS + 1 if cls == "mllog-over-long-line" else rng.choice((10_000, 1_000_000))
        entry = json.loads(body[len(MLLOG_PREFIX) :])
        entry["padding"] = "x" * size
        lines[i] = MLLOG_PREFIX + json.dumps(entry) + "\n"
    return "".join(lines).encode("utf-8")


def _mutate_gzip(rng: random.Random, data: bytes, cls: str) -> bytes:
    if cls == "gzip-bomb":
        return gzip_bomb(MAX_GUNZIP_BYTES + 1)
    if cls == "gzip-truncated":
        return data[: rng.randrange(len(data))]
    if cls == "gzip-trailing-garbage":
        return data + rng.choice((b"\x00", b"garbage", gzip.compress(b"[]", mtime=0)))
    at = rng.randrange(len(data))
    return data[:at] + bytes([data[at] ^ rng.randrange(1, 256)]) + data[at + 1 :]


@functools.lru_cache(maxsize=2)
def gzip_bomb(inflated_bytes: int) -> bytes:
    """A small gzip stream of `inflated_bytes` zeros (256 MiB compress to ~250 KB), built in 1 MiB steps."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk, parts, left = bytes(1 << 20), [], inflated_bytes
    while left:
        parts.append(deflater.compress(chunk[: min(left, len(chunk))]))
        left -= min(left, len(chunk))
    parts.append(deflater.flush())
    return b"".join(parts)
