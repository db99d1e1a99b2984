"""File helpers every stage uses: bounded reads, atomic writes, digests, the user's cache folders.

Reads are bounded because levelfield reads files it did not write (submissions,
user settings); writes are atomic so an interrupted command never leaves half a
file where a whole one was expected.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from levelfield.ground.errors import UserError

# Large enough for any rules, settings or system file; small enough that a
# hostile multi-GB file is refused before it is read.
DEFAULT_READ_LIMIT_BYTES = 4 * 1024 * 1024
_HASH_CHUNK_BYTES = 1024 * 1024


def read_text_limited(path: Path, limit_bytes: int = DEFAULT_READ_LIMIT_BYTES) -> str:
    """Read a UTF-8 text file, refusing files larger than `limit_bytes`."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = f.read(limit_bytes + 1)
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{path}: expected a file, found a directory") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    if len(data) > limit_bytes:
        raise UserError(f"{path}: file larger than the {limit_bytes} byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (invalid byte at offset {e.start})") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes, *, overwrite: bool = False) -> None:
    """Write `data` to `path` via a temporary file in the same folder and a rename.

    With `overwrite=False` an existing file is never replaced: that file may
    hold a user's edits (a filled-in system description, a submission).
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise UserError(f"{path}: already exists; not overwriting it", hint="pass --force to replace it")
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    except OSError as e:
        raise UserError(f"{path}: cannot write ({e.strerror})") from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a written file gets the usual permissions
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if not overwrite and path.exists():
            # Someone created it while we wrote; keep theirs.
            raise UserError(f"{path}: already exists; not overwriting it", hint="pass --force to replace it")
        os.replace(tmp, path)
    except OSError as e:
        raise UserError(f"{path}: cannot write ({e.strerror})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_text(path: Path, text: str, *, overwrite: bool = False) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), overwrite=overwrite)


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        while chunk := f.read(_HASH_CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()


CACHE_OFF = "off"  # a cache's environment variable set to this switches the cache off


def user_cache_folder(env: str, name: str) -> Path | None:
    """A levelfield cache's folder: $`env` where set, None where it is "off", else
    $XDG_CACHE_HOME/levelfield/`name` (~/.cache/levelfield/`name` without XDG_CACHE_HOME)."""
    value = os.environ.get(env, "")
    if value == CACHE_OFF:
        return None
    if value:
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "levelfield" / name
