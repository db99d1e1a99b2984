"""Generated datasets kept on disk between processes, so a run loads in a second what took seconds to make.

    from levelfield.reference import dataset_cache
    arrays = dataset_cache.read(task.dataset)        # None when absent, unreadable or switched off
    dataset_cache.write(task.dataset, arrays)        # only arrays whose digest matched the rules
    dataset_cache.discard(task.dataset)              # a cached copy whose digest did not

A standard task's generator takes seconds in every process that trains or serves it (ctr-dlrm-standard's
2^20 rows about 12 s, image-resnet50-standard's images about 16 s on this project's 2-core CPU), and the
device check and the tests start many such processes. The cache holds each array as a plain `.npy` file
(read with allow_pickle=False) in a folder named by the generator and the digest the rules pin, so a
change of generator or params can never be served stale data; and the caller checks every loaded array
set against the rules' digest before using it, as it checks freshly generated arrays, regenerating on a
mismatch. A folder is written under a temporary name and renamed into place, so a reader never sees half
of one. A cache that cannot be written (read-only home, full disk) is no cache: the run goes on.

Where: $LEVELFIELD_DATASET_CACHE, else $XDG_CACHE_HOME/levelfield/datasets, else
~/.cache/levelfield/datasets; LEVELFIELD_DATASET_CACHE=off switches it off.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

import numpy as np

from levelfield.ground.fsutil import CACHE_OFF, user_cache_folder

CACHE_ENV = "LEVELFIELD_DATASET_CACHE"
OFF = CACHE_OFF  # the value that switches it off


def cache_root() -> Path | None:
    """The cache's folder, or None when switched off."""
    return user_cache_folder(CACHE_ENV, "datasets")


def folder(spec: dict) -> Path | None:
    """Where a generated dataset (the rules' `dataset` entry) lives in the cache."""
    root = cache_root()
    return None if root is None else root / f"{spec['generator']}-{spec['sha256']}"


def read(spec: dict) -> dict[str, np.ndarray] | None:
    """The cached arrays by the rules' names, or None (absent, incomplete, unreadable, switched off)."""
    where = folder(spec)
    if where is None or not where.is_dir():
        return None
    try:
        return {name: np.load(where / f"{name}.npy", allow_pickle=False) for name in spec["arrays"]}
    except (OSError, ValueError):
        return None


def discard(spec: dict) -> None:
    """Remove a cached dataset whose digest did not match (a damaged file); never raises."""
    where = folder(spec)
    if where is not None:
        shutil.rmtree(where, ignore_errors=True)


def write(spec: dict, arrays: dict[str, np.ndarray]) -> None:
    """Keep `arrays` (already checked against the rules' digest) for the next process; never raises."""
    where = folder(spec)
    if where is None or where.is_dir():
        return
    temporary = None
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=f".{where.name}-", dir=where.parent))
        for name in spec["arrays"]:
            np.save(temporary / f"{name}.npy", arrays[name], allow_pickle=False)
        temporary.rename(where)  # atomic; fails if another process got there first, which is as good
        temporary = None
    except OSError:
        pass
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(temporary)
