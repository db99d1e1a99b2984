"""The framework-neutral weight file: an uncompressed .npz of float32 arrays, no pickle.

    save_weights("w.npz", impl.export())
    impl.load(load_weights("w.npz"))

Names and layouts are those of reference/<task>/common/model_spec.py; each
framework's weights.py documents its mapping. `.npz` because numpy reads it
everywhere without any framework, and `allow_pickle=False` means a weight file
can never run code.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np

from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import atomic_write_bytes

# Checkpoints of these models are well under 1 MB; refuse anything absurd.
MAX_WEIGHTS_BYTES = 64 * 1024 * 1024


def save_weights(path: Path, weights: dict[str, np.ndarray], *, overwrite: bool = False) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **{name: np.ascontiguousarray(value) for name, value in sorted(weights.items())})
    atomic_write_bytes(Path(path), buffer.getvalue(), overwrite=overwrite)


def load_weights(path: Path) -> dict[str, np.ndarray]:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: weights file not found")
    if path.stat().st_size > MAX_WEIGHTS_BYTES:
        raise UserError(f"{path}: weights file larger than the {MAX_WEIGHTS_BYTES} byte limit")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        raise UserError(f"{path}: not a levelfield weights file (.npz without pickled objects): {e}") from None


def check_weights(weights: dict[str, np.ndarray], expected_shapes: dict[str, tuple], source: str) -> None:
    """Names, shapes and dtype of neutral weights against the task's spec; one line per problem."""
    problems = []
    for name in sorted(set(expected_shapes) - set(weights)):
        problems.append(f"{source}: missing weight {name!r} (shape {expected_shapes[name]})")
    for name in sorted(set(weights) - set(expected_shapes)):
        problems.append(f"{source}: unknown weight {name!r}")
    for name in sorted(set(weights) & set(expected_shapes)):
        value = weights[name]
        if tuple(value.shape) != tuple(expected_shapes[name]):
            problems.append(f"{source}: {name}: shape {tuple(value.shape)}, expected {tuple(expected_shapes[name])}")
        elif value.dtype != np.float32:
            problems.append(f"{source}: {name}: dtype {value.dtype}, expected float32")
    if problems:
        raise UserError("\n".join(problems))
