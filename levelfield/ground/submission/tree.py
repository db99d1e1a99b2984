"""Read a submission tree safely: no symlink is followed, nothing outside the root is opened, sizes are capped.

    from levelfield.ground.submission.tree import read_tree
    tree = read_tree(Path("submissions/example"))
    tree.files["MANIFEST"].data         # bytes, read once
    tree.refused                        # [(path, why)] of entries not read; checks report them
    tree = read_tree(root, lazy=True)   # listed only: tree.read(path) reads a file when it is needed
    tree.read("closed/X/results/.../mlperf_log_detail.txt"); tree.close()

The walk uses `os.scandir` without following links and opens each regular
file with O_NOFOLLOW relative to its folder's descriptor, so a file swapped
for a symlink between listing and reading is refused, not followed. Anything
that is not a regular file or folder (symlink, FIFO, socket, device) is
recorded as a problem and never opened. Limits are the checker's own safety
margins, not benchmark rules: far above what an honest submission holds.

A lazy tree (MLCommons Inference rounds: thousands of results, gigabytes of
logs) holds no bytes: the walk lists and sizes every file, and `read(path)`
opens it when a check needs it, folder by folder from the root with
O_NOFOLLOW again (a folder or file swapped for a link after the listing is
not followed: `read` answers None). The caller keeps what it parsed and drops
the bytes, so memory does not grow with the tree. A lazy tree's files carry
no digest (MLCommons trees have no MANIFEST to compare them with).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from levelfield.ground.errors import UserError

MAX_FILE_BYTES = 64 * 1024 * 1024  # the largest accuracy log of rules 1.0 is a few MB
MAX_FILES = 50_000  # a large round: thousands of results x ~10 files
# Listed, not held: ~200 bytes per file. An MLCommons Inference result is ~25 files (its logs, accuracy
# and three compliance tests), and a round's code/ and measurements/ folders are listed too.
MAX_LISTED_FILES = 400_000
OPEN_FOLDERS = 32  # folder descriptors a lazy tree keeps open between reads (one result's folders)
MAX_DEPTH = 16  # the layout is 9 folders deep (performance/run_<i>/)


@dataclass(slots=True)
class FileData:
    path: str  # relative to the root, "/"-separated
    size: int
    sha256: str  # "" in a lazy tree
    data: bytes | None  # None in a lazy tree: Tree.read(path)


@dataclass
class Tree:
    root: Path
    files: dict[str, FileData] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    # Entries that exist but were not read: (relpath, kind) with kind symlink | special | too-large | too-deep.
    refused: list[tuple[str, str]] = field(default_factory=list)
    truncated: bool = False  # more than MAX_FILES files: the rest were not read
    max_file_bytes: int = MAX_FILE_BYTES
    _folders: OrderedDict = field(default_factory=OrderedDict, repr=False)  # lazy reads: folder -> open fd

    def read(self, path: str) -> bytes | None:
        """The file's bytes: held (a tree read whole), or read now (a lazy tree); None when the listing has
        no such file, or it is no longer a regular file within the size limit."""
        file = self.files.get(path)
        if file is None or file.data is not None:
            return None if file is None else file.data
        folder, _, name = path.rpartition("/")
        try:
            data = _read(self._folder(folder), name, self.max_file_bytes)
        except OSError:  # a folder of the path is a link now, or gone
            return None
        return None if data is None or len(data) > self.max_file_bytes else data

    def _folder(self, folder: str) -> int:
        """An open descriptor of `folder` (relative; "" the root), each part opened with O_NOFOLLOW."""
        fd = self._folders.get(folder)
        if fd is not None:
            self._folders.move_to_end(folder)
            return fd
        if folder:
            parent, _, name = folder.rpartition("/")
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self._folder(parent))
        else:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        self._folders[folder] = fd
        while len(self._folders) > OPEN_FOLDERS:
            os.close(self._folders.popitem(last=False)[1])
        return fd

    def close(self) -> None:
        """Close the folders a lazy tree's reads keep open (nothing to do for a tree read whole)."""
        while self._folders:
            os.close(self._folders.popitem()[1])


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


def read_tree(
    root: Path, *, max_file_bytes: int = MAX_FILE_BYTES, max_files: int | None = None, lazy: bool = False
) -> Tree:
    """Every file of the tree read (lazy: listed only, read by Tree.read); max_files defaults to MAX_FILES,
    MAX_LISTED_FILES for a lazy tree."""
    root = Path(root)
    if root.is_symlink() or not root.is_dir():
        raise UserError(
            f"{root}: not a submission folder (expected a directory holding MANIFEST and <division>/<org>/)"
        )
    if max_files is None:
        max_files = MAX_LISTED_FILES if lazy else MAX_FILES
    tree = Tree(root=root, max_file_bytes=max_file_bytes)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _walk(tree, root_fd, "", 0, max_file_bytes, max_files, lazy)
    finally:
        os.close(root_fd)
    return tree


def _walk(tree: Tree, dir_fd: int, prefix: str, depth: int, max_file_bytes: int, max_files: int, lazy: bool) -> None:
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
                _walk(tree, sub_fd, rel + "/", depth + 1, max_file_bytes, max_files, lazy)
            finally:
                os.close(sub_fd)
        elif not stat.S_ISREG(info.st_mode):
            tree.refused.append((rel, "special"))
        elif info.st_size > max_file_bytes:
            tree.refused.append((rel, "too-large"))
        elif len(tree.files) >= max_files:
            tree.truncated = True
        elif lazy:
            tree.files[rel] = FileData(rel, info.st_size, "", None)
        else:
            data = _read(dir_fd, entry.name, max_file_bytes)
            if data is None:
                tree.refused.append((rel, "special"))
            elif len(data) > max_file_bytes:  # grew after the listing
                tree.refused.append((rel, "too-large"))
            else:
                tree.files[rel] = FileData(rel, len(data), hashlib.sha256(data).hexdigest(), data)
