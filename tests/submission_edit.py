"""Edit a copy of a submission tree the way a careless or dishonest submitter would.

    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(first(tree, "training/result_1.txt"), "seed", lambda line: {**line, "value": 7})
    reseal(tree)                      # rewrite MANIFEST so only the planted defect remains

Each helper changes one thing; tests plant one defect and expect exactly the
code of the check that should catch it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

MLLOG_PREFIX = ":::MLLOG "


def loadgen_error_line(message: str = "Multiple responses for sample") -> str:
    """A detail-log line as LoadGen writes an error (is_error true), with its newline."""
    entry = {
        "key": "error_runtime",
        "value": message,
        "time_ms": 1.0,
        "namespace": "mlperf::logging",
        "event_type": "POINT_IN_TIME",
        "metadata": {"is_error": True, "is_warning": False, "file": "logging.cc", "line_no": 1, "pid": 1, "tid": 1},
    }
    return MLLOG_PREFIX + json.dumps(entry) + "\n"


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def first(root: Path, suffix: str) -> Path:
    """The first file (in sorted order) whose path ends with `suffix`."""
    found = [p for p in files(root) if p.as_posix().endswith(suffix)]
    assert found, f"no file ending in {suffix} under {root}"
    return found[0]


def change_one_byte(root: Path) -> None:
    """One byte of a file no check reads but the MANIFEST's digest (a performance repeat's summary)."""
    path = first(root, "performance/run_1/mlperf_log_summary.txt")
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x20
    path.write_bytes(bytes(data))


def reseal(root: Path) -> None:
    """Rewrite MANIFEST from the tree's regular files (what `levelfield package` would have written)."""
    lines = [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(root).as_posix()}\n"
        for p in files(root)
        if p.relative_to(root).as_posix() not in ("MANIFEST", "MANIFEST.sig")  # neither lists itself
    ]
    (root / "MANIFEST").write_text("".join(lines), encoding="utf-8")


def edit_mllog(path: Path, key: str, change, occurrence: int = 0) -> None:
    """Replace the `occurrence`-th line of `key` (-1: the last) by change(entry), or drop it when that is None."""
    if occurrence < 0:
        count = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if f'"key": "{key}"' in line)
        occurrence += count
    out, seen = [], 0
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith(MLLOG_PREFIX):
            entry = json.loads(line[len(MLLOG_PREFIX) :])
            if entry.get("key") == key:
                if seen == occurrence:
                    new = change(entry)
                    seen += 1
                    if new is not None:
                        out.append(MLLOG_PREFIX + json.dumps(new) + "\n")
                    continue
                seen += 1
        out.append(line)
    assert seen > occurrence, f"{path}: no line {occurrence} of key {key}"
    path.write_text("".join(out), encoding="utf-8")


def set_value(value):
    return lambda entry: {**entry, "value": value}


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def read_gz_json(path: Path):
    return json.loads(gzip.decompress(path.read_bytes()))


def write_gz_json(path: Path, data) -> None:
    path.write_bytes(gzip.compress(json.dumps(data).encode("utf-8"), mtime=0))
