"""The ONNX model file ONNX Runtime serves: written once per graph and weights, cached, named by SHA-256.

    from levelfield.reference.frameworks.onnxruntime.model_file import model_file
    served = model_file(graph, initializers)       # graph.py's Graph, {initializer name: array}
    served.model_path, served.as_record()          # what the session loads; what result.json records

Two files per model, in one folder: `model.onnx`, the graph (a few hundred kB
at most), and `weights.bin`, every initializer's bytes as ONNX external data
(each at an offset aligned to ALIGN_BYTES, so ONNX Runtime can map the file
instead of copying it). Kept apart, the graph stays small whatever the
weights weigh (ctr-dlrm-standard's tables are 1.07 GiB, near protobuf's
2 GiB limit for one message), and the weights are written straight from the
numpy arrays, never copied into a protobuf on the way.

The cache. Building and writing a model takes seconds at the standard tasks'
sizes, and every `levelfield infer` process would repeat it, so the folder is
kept, named by a key over BUILDER_VERSION, the graph file's SHA-256 and the
weights file's SHA-256 (computed from the arrays before anything is written):
other weights, another task, a changed builder, another opset, each gets a
folder of its own. A cached folder is used only when both files hash to what
this build would have written (a damaged or half-written folder is rebuilt);
a folder is written under a temporary name and renamed into place, so a reader
never sees half of one. Where: $LEVELFIELD_ONNX_CACHE, else
$XDG_CACHE_HOME/levelfield/onnx, else ~/.cache/levelfield/onnx;
LEVELFIELD_ONNX_CACHE=off builds into a temporary folder removed at exit. The
run's result.json records both digests and the key (`served_graph`).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import TensorProto, helper

from levelfield.ground.fsutil import CACHE_OFF, user_cache_folder
from levelfield.reference.frameworks.onnxruntime.graph import IR_VERSION, OPSET

if TYPE_CHECKING:
    from levelfield.reference.frameworks.onnxruntime.graph import Graph

# Bump when a builder changes what it writes for the same graph and weights without changing the graph file
# (the key covers the graph file's digest too, so a changed node already makes a new folder).
BUILDER_VERSION = "1"
CACHE_ENV = "LEVELFIELD_ONNX_CACHE"
OFF = CACHE_OFF  # the value that switches it off
MODEL_FILE, DATA_FILE = "model.onnx", "weights.bin"
ALIGN_BYTES = 4096  # a page: ONNX Runtime maps external data whose offset is page-aligned
_HASH_CHUNK_BYTES = 1 << 24


@dataclass(frozen=True)
class ModelFile:
    """One written (or cached) model: where its files are and what they hash to."""

    folder: Path
    model_sha256: str  # SHA-256 of model.onnx, the graph
    data_sha256: str  # SHA-256 of weights.bin, every initializer's bytes
    key: str  # the cache folder's name
    from_cache: bool  # found in the cache, not written by this process

    @property
    def model_path(self) -> Path:
        return self.folder / MODEL_FILE

    def as_record(self) -> dict:
        """result.json's `served_graph`."""
        return {
            "format": "onnx",
            "opset": OPSET,
            "ir_version": IR_VERSION,
            "builder_version": BUILDER_VERSION,
            "model_sha256": self.model_sha256,
            "data_sha256": self.data_sha256,
            "cache_key": self.key,
            "from_cache": self.from_cache,
        }


def cache_root() -> Path | None:
    """The cache's folder, or None when switched off."""
    return user_cache_folder(CACHE_ENV, "onnx")


def _layout(arrays: dict[str, np.ndarray]) -> tuple[list[TensorProto], list[tuple[int, np.ndarray]]]:
    """External-data TensorProtos for `arrays` (in order) and where each array's bytes go in DATA_FILE."""
    protos, placed, offset = [], [], 0
    for name, value in arrays.items():
        array = np.ascontiguousarray(value)
        if array.dtype.byteorder == ">":  # ONNX stores little-endian
            array = array.astype(array.dtype.newbyteorder("<"))
        offset = -(-offset // ALIGN_BYTES) * ALIGN_BYTES
        tensor = TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(array.dtype), dims=array.shape)
        tensor.data_location = TensorProto.EXTERNAL
        for key, text in (("location", DATA_FILE), ("offset", str(offset)), ("length", str(array.nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, text
        protos.append(tensor)
        placed.append((offset, array))
        offset += array.nbytes
    return protos, placed


def _data_chunks(placed: list[tuple[int, np.ndarray]]):
    """The bytes of DATA_FILE in order: zero padding up to each offset, then the array's bytes."""
    position = 0
    for offset, array in placed:
        if offset > position:
            yield bytes(offset - position)
        data = memoryview(array.reshape(-1).view(np.uint8))
        for start in range(0, len(data), _HASH_CHUNK_BYTES):
            yield data[start : start + _HASH_CHUNK_BYTES]
        position = offset + array.nbytes


def _file_sha256(path: Path) -> str | None:
    try:
        digest = hashlib.sha256()
        with path.open("rb") as f:
            while chunk := f.read(_HASH_CHUNK_BYTES):
                digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None


def model_file(graph: Graph, initializers: dict[str, np.ndarray]) -> ModelFile:
    """The model of `graph` with `initializers` bound, from the cache or written now."""
    protos, placed = _layout(initializers)
    model_bytes = graph.model(protos).SerializeToString(deterministic=True)
    model_sha256 = hashlib.sha256(model_bytes).hexdigest()
    data_digest = hashlib.sha256()
    for chunk in _data_chunks(placed):
        data_digest.update(chunk)
    data_sha256 = data_digest.hexdigest()
    key = hashlib.sha256(f"{BUILDER_VERSION}:{model_sha256}:{data_sha256}".encode()).hexdigest()[:32]
    root = cache_root()
    if root is None:
        folder = Path(tempfile.mkdtemp(prefix="levelfield-onnx-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _write(folder, model_bytes, placed)
        return ModelFile(folder, model_sha256, data_sha256, key, from_cache=False)
    folder = root / key
    if _intact(folder, model_sha256, data_sha256):
        return ModelFile(folder, model_sha256, data_sha256, key, from_cache=True)
    shutil.rmtree(folder, ignore_errors=True)  # damaged or half-written: rebuilt
    root.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        _write(temporary, model_bytes, placed)
        try:
            temporary.rename(folder)
        except OSError:  # another process renamed its copy into place first: use that one
            if not _intact(folder, model_sha256, data_sha256):
                raise
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return ModelFile(folder, model_sha256, data_sha256, key, from_cache=False)


def _intact(folder: Path, model_sha256: str, data_sha256: str) -> bool:
    return _file_sha256(folder / MODEL_FILE) == model_sha256 and _file_sha256(folder / DATA_FILE) == data_sha256


def _write(folder: Path, model_bytes: bytes, placed: list[tuple[int, np.ndarray]]) -> None:
    (folder / MODEL_FILE).write_bytes(model_bytes)
    with (folder / DATA_FILE).open("wb") as f:
        for chunk in _data_chunks(placed):
            f.write(chunk)
        with contextlib.suppress(OSError):
            os.fsync(f.fileno())
    # ONNX's own checker on the written model: node and attribute schemas of the opset, types, that every
    # external tensor's file is there (reading the graph file only).
    onnx.checker.check_model(str(folder / MODEL_FILE))
