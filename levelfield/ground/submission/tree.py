"""Read a submission tree safely: no symlink is followed, nothing outside the root is opened, sizes are capped.

    from levelfield.ground.submission.tree import read_tree
    tree = read_tree(Path("submissions/example"))
    tree.files["MANIFEST"].data         # bytes, read once
    tree.refused                        # [(path, why)] of entries not read; checks report them

The walk uses `os.scandir` without following links and opens each regular
file with O_NOFOLLOW relative to its folder's descriptor, so a file swapped
for a symlink between listing and reading is refused, not followed. Anything
that is not a regular file or folder (symlink, FIFO, socket, device) is
recorded as a problem and never opened. Limits are the checker's own safety
margins, not benchmark rules: far above what an honest submission holds.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from levelfield.ground.errors import UserError

MAX_FILE_BYTES = 64 * 1024 * 1024  # the largest accuracy log of rules 1.0 is a few MB
MAX_FILES = 50_000  # a large round: thousands of results x ~10 files
MAX_DEPTH = 16  # the layout is 9 folders deep (performance/run_<i>/)


@dataclass
class FileData:
    path: str  # relative to the root, "/"-separated
    size: int
    sha256: str
    data: bytes


@dataclass
class Tree:
    root: Path
    files: dict[str, FileData] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    # Entries that exist but were not read: (relpath, kind) with kind symlink | special | too-large | too-deep.
    refused: list[tuple[str, str]] = field(default_factory=list)
    truncated: bool = False  # more than MAX_FILES files: the rest were not read


def _read(dir_fd: int, name: str, size_limit: int) -> bytes | None:
    """The file's bytes, or None when it is not a regular file at open time (a race with a symlink)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, total = [], 0
        while total <= size_limit:
            chunk = os.read(fd, min(1 << 20, size_limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_tree(root: Path, *, max_file_bytes: int = MAX_FILE_BYTES, max_files: int = MAX_FILES) -> Tree:
    root = Path(root)
    if root.is_symlink() or not root.is_dir():
        raise UserError(
            f"{root}: not a submission folder (expected a directory holding MANIFEST and <division>/<org>/)"
        )
    tree = Tree(root=root)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _walk(tree, root_fd, "", 0, max_file_bytes, max_files)
    finally:
        os.close(root_fd)
    return tree


def _walk(tree: Tree, dir_fd: int, prefix: str, depth: int, max_file_bytes: int, max_files: int) -> None:
    with os.scandir(dir_fd) as entries:
        listing = sorted(entries, key=lambda e: e.name)
    for entry in listing:
        rel = f"{prefix}{entry.name}"
        if tree.truncated:
            return
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            tree.refused.append((rel, "special"))
            continue
        if stat.S_ISLNK(info.st_mode):
            tree.refused.append((rel, "symlink"))
        elif stat.S_ISDIR(info.st_mode):
            if depth >= MAX_DEPTH:
                tree.refused.append((rel, "too-deep"))
                continue
            tree.dirs.add(rel)
            try:
                sub_fd = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            except OSError:
                tree.refused.append((rel, "special"))
                continue
            try:
                _walk(tree, sub_fd, rel + "/", depth + 1, max_file_bytes, max_files)
            finally:
                os.close(sub_fd)
        elif not stat.S_ISREG(info.st_mode):
            tree.refused.append((rel, "special"))
        elif info.st_size > max_file_bytes:
            tree.refused.append((rel, "too-large"))
        elif len(tree.files) >= max_files:
            tree.truncated = True
        else:
            data = _read(dir_fd, entry.name, max_file_bytes)
            if data is None:
                tree.refused.append((rel, "special"))
            elif len(data) > max_file_bytes:  # grew after the listing
                tree.refused.append((rel, "too-large"))
            else:
                tree.files[rel] = FileData(rel, len(data), hashlib.sha256(data).hexdigest(), data)
