"""Integrity: any one-byte change to any file of the example submission is detected.

The walk visits every file of submissions/example and changes one byte at the
first, the last and a seeded random position (XOR with a seeded non-zero
value), leaving the MANIFEST as packaged. A change to a listed file must give
STR006 at that file; a change to the MANIFEST itself (which no digest covers)
must still fail the check, whatever the byte: a digest, a separator, a path
or a line end. Checks reuse the parse results of the untouched files
(tools/fuzz/reuse.py); the changed file is always parsed for real.
"""

from __future__ import annotations

import random

import pytest

from levelfield.checker.engine import check_tree
from levelfield.tools.fuzz.run import prepared
from levelfield.tools.fuzz.workspace import Write
from tests.test_checker_fixtures import EXAMPLE

EXAMPLE_FILES = sorted(p.relative_to(EXAMPLE).as_posix() for p in EXAMPLE.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    with prepared(EXAMPLE, tmp_path_factory.mktemp("integrity")) as (workspace, _):
        yield workspace


def one_byte_changes(data: bytes, rng: random.Random) -> list[tuple[int, int]]:
    """(position, xor) for the first, the last and one random byte."""
    positions = sorted({0, len(data) - 1, rng.randrange(len(data))})
    return [(at, rng.randrange(1, 256)) for at in positions]


def changed(data: bytes, at: int, xor: int) -> bytes:
    return data[:at] + bytes([data[at] ^ xor]) + data[at + 1 :]


def test_the_walk_covers_every_file_of_the_example(ws):
    assert sorted(ws.base_files) == EXAMPLE_FILES and len(EXAMPLE_FILES) > 40


@pytest.mark.parametrize("rel", EXAMPLE_FILES)
def test_any_one_byte_change_is_detected(ws, rel):
    rng = random.Random(f"integrity:{rel}")
    data = ws.base_files[rel]
    for at, xor in one_byte_changes(data, rng):
        ws.apply([Write(rel, changed(data, at, xor))])
        try:
            report = check_tree(ws.root)
        finally:
            ws.restore()
        where = f"{rel} byte {at} ^ {xor:#04x}"
        assert report.failed, f"{where}: checks clean"
        assert "CHK001" not in {f.code for f in report.active}, where
        if rel != "MANIFEST":
            assert ("STR006", rel) in {(f.code, f.path) for f in report.active}, where


def test_every_line_structure_byte_of_the_manifest_is_covered(ws):
    """Each line end and digest/path separator of the MANIFEST, changed to any of several bytes that a
    lenient line splitter would still accept ("\\r", "\\v", "\\x1c", " ", "\\t"), is detected."""
    manifest = ws.base_files["MANIFEST"]
    structural = [i for i, b in enumerate(manifest) if b in b"\n "]
    rng = random.Random("integrity:manifest")
    for at in rng.sample(structural, 40) + [len(manifest) - 1]:
        for replacement in (b"\r", b"\x0b", b"\x1c", b" ", b"\t"):
            if manifest[at : at + 1] == replacement:
                continue
            ws.apply([Write("MANIFEST", manifest[:at] + replacement + manifest[at + 1 :])])
            try:
                report = check_tree(ws.root, select=["STR"])
            finally:
                ws.restore()
            assert report.failed, f"MANIFEST byte {at} -> {replacement!r}: checks clean"
