"""Fashion-MNIST from gzip'd IDX files, checked against the SHA-256 digests in the rules.

    from levelfield.rules import load_suite
    from levelfield.reference.fmnist_resnet.common.dataset import load, read_idx
    arrays = load(load_suite().task("fmnist-resnet"))      # uint8: images (n, 28, 28), labels (n,)
    images = read_idx("t10k-images-idx3-ubyte.gz", shape=[10000, 28, 28])

Data folder, first one set wins (a folder the user named is never silently
replaced by another): the `data_dir` argument (`--data-dir`), then
$LEVELFIELD_DATA_DIR, then the rules' `default_dir` (where Debian's package
`dataset-fashion-mnist` installs the files).

IDX format (yann.lecun.com/exdb/mnist): a 4-byte magic 0x00 0x00 TYPE NDIMS,
NDIMS big-endian uint32 dimensions, then the values row-major, big-endian.
Every file's SHA-256 is compared with the rules before it is parsed, so the
parser only ever sees the exact published bytes; its own checks (magic,
dimensions, payload length) guard files read directly with `read_idx`.
Pixels stay uint8 in [0, 255]: scaling is the framework code's job.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import sha256_file
from levelfield.reference.datasets import DatasetReport, DigestCheck
from levelfield.rules.loader import Task

DATA_DIR_ENV = "LEVELFIELD_DATA_DIR"
# IDX type byte -> numpy dtype of the payload (big-endian, as stored).
IDX_TYPES = {0x08: np.dtype("u1"), 0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_IDX_CODES = {dtype.newbyteorder("="): code for code, dtype in IDX_TYPES.items()}


def resolve_data_dir(spec: dict, data_dir: str | os.PathLike | None = None) -> tuple[Path, str]:
    """The data folder to read and a phrase saying where that choice came from."""
    if data_dir is not None:
        return Path(data_dir), "given by --data-dir"
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV]), f"from ${DATA_DIR_ENV}"
    return Path(spec["default_dir"]), f"the rules' default_dir; neither --data-dir nor ${DATA_DIR_ENV} set"


def _install_hint(spec: dict) -> str:
    return (
        f"apt-get install -y {spec['debian_package']} (it installs to {spec['default_dir']}), "
        f"or point --data-dir / ${DATA_DIR_ENV} at a folder holding "
        + ", ".join(f["file"] for f in spec["files"].values())
    )


def _mismatch_hint(spec: dict) -> str:
    return (
        f"reinstall with 'apt-get install --reinstall {spec['debian_package']}' or point --data-dir / "
        f"{DATA_DIR_ENV} at a folder with the original files"
    )


def _existing_files(spec: dict, data_dir) -> dict[str, Path]:
    """name -> path of every file the rules list; UserError naming what was searched when one is missing."""
    folder, origin = resolve_data_dir(spec, data_dir)
    if not folder.is_dir():
        raise UserError(f"{folder}: {spec['name']} data folder not found ({origin})", hint=_install_hint(spec))
    paths = {name: folder / entry["file"] for name, entry in spec["files"].items()}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise UserError(
            "\n".join(f"{p}: file not found (data folder {folder}, {origin})" for p in missing),
            hint=_install_hint(spec),
        )
    return paths


def _sha256(path: Path) -> str:
    try:
        return sha256_file(path)
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror or e})") from None


def verify(task: Task, data_dir: str | os.PathLike | None = None) -> DatasetReport:
    """SHA-256 of every file against the rules. Missing folder / file: UserError; mismatch: in the report."""
    spec = task.dataset
    paths = _existing_files(spec, data_dir)
    checks = tuple(
        DigestCheck(str(paths[name]), entry["sha256"], _sha256(paths[name]), entry["file"])
        for name, entry in spec["files"].items()
    )
    folder = str(next(iter(paths.values())).parent)
    return DatasetReport(task.id, spec["name"], spec["kind"], folder, checks, _mismatch_hint(spec))


def load(task: Task, data_dir: str | os.PathLike | None = None) -> dict[str, np.ndarray]:
    """{train_images, train_labels, eval_images, eval_labels} (the rules' names), digests checked first."""
    spec = task.dataset
    verify(task, data_dir).raise_if_bad()
    paths = _existing_files(spec, data_dir)
    return {name: read_idx(paths[name], entry["shape"], entry["dtype"]) for name, entry in spec["files"].items()}


def _idx_bytes(path: Path, limit: int) -> bytes:
    """The (decompressed) file content, at most `limit` bytes: a gzip bomb is cut off, not inflated."""
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as f:
            return f.read(limit)
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise UserError(f"{path}: not a valid gzip file ({e or 'compressed data ends early'})") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror or e})") from None


def read_idx(path: str | os.PathLike, shape: list[int], dtype: str = "uint8") -> np.ndarray:
    """Parse one IDX file (gzip'd when its name ends in .gz) whose content must have exactly `shape` / `dtype`.

    Returns a native-endian array of `shape`; UserError names the file and
    the value found vs expected for a wrong magic, dimension or payload length.
    """
    path = Path(path)
    want_dtype = np.dtype(dtype)
    if want_dtype not in _IDX_CODES:
        raise UserError(f"{path}: IDX files cannot hold {dtype} (IDX types: {', '.join(map(str, _IDX_CODES))})")
    code, ndims = _IDX_CODES[want_dtype], len(shape)
    header_len = 4 + 4 * ndims
    payload_len = int(np.prod(shape, dtype=np.int64)) * want_dtype.itemsize
    data = _idx_bytes(path, header_len + payload_len + 1)  # +1: detects trailing bytes

    want_magic = (code << 8) | ndims
    if len(data) < 4:
        raise UserError(f"{path}: file too short for an IDX header ({len(data)} bytes)")
    magic = struct.unpack(">I", data[:4])[0]
    if magic != want_magic:
        raise UserError(
            f"{path}: IDX magic 0x{magic:08x}, expected 0x{want_magic:08x} "
            f"({want_dtype}, {ndims} dimension{'s' if ndims != 1 else ''})"
        )
    if len(data) < header_len:
        raise UserError(f"{path}: IDX header truncated ({len(data)} of {header_len} bytes)")
    dims = list(struct.unpack(f">{ndims}I", data[4:header_len]))
    if dims != list(shape):
        raise UserError(f"{path}: IDX dimensions {dims}, expected {list(shape)}")
    found = len(data) - header_len
    if found < payload_len:
        raise UserError(f"{path}: truncated: {found} payload bytes, expected {payload_len} for shape {list(shape)}")
    if found > payload_len:
        raise UserError(f"{path}: trailing data after the {payload_len} payload bytes of shape {list(shape)}")
    array = np.frombuffer(data, dtype=IDX_TYPES[code], count=payload_len // want_dtype.itemsize, offset=header_len)
    return array.astype(want_dtype).reshape(shape)  # astype: a writable, native-endian copy
