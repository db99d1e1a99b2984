"""A working copy of a submission tree that one fuzz input at a time damages and then restores.

    ws = Workspace.create(Path("submissions/example"), Path("/tmp/fuzz"))
    ws.apply([Write("MANIFEST", b"")])      # damage
    report = check_tree(ws.root)
    ws.restore()                            # back to the example, byte for byte

Copying the 2.7 MB example for each of 10,000 inputs would cost more than
checking it, so the tree is copied once and every input touches a few paths
that `restore()` puts back. Beside the tree, outside it, lies a secret file
(and a folder holding one) for the symlink cases to point at: its text must
never appear in anything the checker prints.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from levelfield.ground import layout as L


@dataclass(frozen=True)
class Write:
    rel: str
    data: bytes


@dataclass(frozen=True)
class Remove:
    rel: str


@dataclass(frozen=True)
class Symlink:
    rel: str
    target: str  # as stored in the link: absolute, or relative to the link's folder


@dataclass(frozen=True)
class Special:
    rel: str
    kind: str  # fifo | socket


@dataclass(frozen=True)
class Sparse:
    rel: str
    size: int  # bytes; no disk blocks are used


@dataclass(frozen=True)
class Mkdir:
    rel: str


@dataclass(frozen=True)
class ManyFiles:
    rel: str  # a new folder
    count: int


class Workspace:
    def __init__(self, root: Path, outside: Path, secret: str, base_files: dict[str, bytes], base_dirs: set[str]):
        self.root, self.outside, self.secret = root, outside, secret
        self.base_files, self.base_dirs = base_files, base_dirs
        self.touched: set[str] = set()

    @classmethod
    def create(cls, example: Path, work: Path) -> Workspace:
        root, outside = work / "tree", work / "outside"
        shutil.copytree(example, root, symlinks=True)
        secret = f"LEVELFIELD-SECRET-{secrets.token_hex(8)}"
        (outside / "folder").mkdir(parents=True)
        for path in (outside / "secret.txt", outside / "folder" / "result_0.txt", outside / "folder" / "secret.json"):
            path.write_text(f'{{"secret": "{secret}"}}\n:::MLLOG {{"key": "{secret}", "value": "{secret}"}}\n')
        files, dirs = _listing(root)
        return cls(root, outside, secret, {rel: (root / rel).read_bytes() for rel in files}, dirs)

    @property
    def secret_file(self) -> Path:
        return self.outside / "secret.txt"

    def path(self, rel: str) -> Path:
        return self.root / rel

    # --- damage ----------------------------------------------------------------------------------

    def apply(self, edits: Iterable[Write | Remove | Symlink | Special | Sparse | Mkdir | ManyFiles]) -> None:
        for edit in edits:
            self.touched.add(edit.rel)
            target = self.path(edit.rel)
            if isinstance(edit, Remove):
                _remove(target)
                continue
            _remove(target)
            self._make_parents(target)
            if isinstance(edit, Write):
                target.write_bytes(edit.data)
            elif isinstance(edit, Symlink):
                os.symlink(edit.target, target)
            elif isinstance(edit, Special):
                _make_special(target, edit.kind)
            elif isinstance(edit, Sparse):
                with open(target, "wb") as f:
                    f.truncate(edit.size)
            elif isinstance(edit, Mkdir):
                target.mkdir()
            elif isinstance(edit, ManyFiles):
                target.mkdir()
                for i in range(edit.count):
                    os.close(os.open(target / f"f{i}", os.O_CREAT | os.O_WRONLY, 0o644))
            else:
                raise TypeError(f"unknown edit {edit!r}")

    def _make_parents(self, target: Path) -> None:
        """Create the missing folders above `target`, remembering the topmost so restore() removes it."""
        missing = [p for p in target.relative_to(self.root).parents if str(p) != "." and not self.path(str(p)).exists()]
        if missing:
            self.touched.add(missing[-1].as_posix())
            target.parent.mkdir(parents=True)

    def reseal(self) -> None:
        """Rewrite MANIFEST from the regular files now in the tree, as `levelfield package` writes it."""
        lines = []
        for folder, _subdirs, names in os.walk(self.root):
            for name in names:
                path = Path(folder) / name
                rel = path.relative_to(self.root).as_posix()
                if rel == L.MANIFEST or path.is_symlink() or not path.is_file():
                    continue
                data = self.base_files.get(rel) if rel not in self.touched else None
                data = data if data is not None else path.read_bytes()
                lines.append((rel, hashlib.sha256(data).hexdigest()))
        text = "".join(f"{digest}  {rel}\n" for rel, digest in sorted(lines))
        self.apply([Write(L.MANIFEST, text.encode("utf-8", "surrogateescape"))])

    # --- repair ----------------------------------------------------------------------------------

    def restore(self) -> None:
        """Put every touched path back as it was in the example (files, folders and what was below)."""
        for rel in sorted(self.touched, key=lambda r: r.count("/")):
            _remove(self.path(rel))
            prefix = rel + "/"
            for folder in sorted(d for d in self.base_dirs if d == rel or d.startswith(prefix)):
                self.path(folder).mkdir(parents=True, exist_ok=True)
            for file_rel, data in self.base_files.items():
                if file_rel == rel or file_rel.startswith(prefix):
                    self.path(file_rel).parent.mkdir(parents=True, exist_ok=True)
                    self.path(file_rel).write_bytes(data)
        self.touched.clear()

    def differences(self) -> list[str]:
        """Paths where the working copy differs from the example (empty when restore() did its job)."""
        files, dirs = _listing(self.root)
        changed = [
            rel
            for rel in files
            if rel in self.base_files
            and (
                self.path(rel).is_symlink()
                or not self.path(rel).is_file()
                or self.path(rel).read_bytes() != self.base_files[rel]
            )
        ]
        return sorted(set(changed) | (files ^ set(self.base_files)) | (dirs ^ self.base_dirs))


def _listing(root: Path) -> tuple[set[str], set[str]]:
    """(files, folders) below root as "/"-separated relative paths; links and special files count as files."""
    files, dirs = set(), set()
    for folder, subdirs, names in os.walk(root):
        base = Path(folder).relative_to(root)
        for name in subdirs:
            (files if (Path(folder) / name).is_symlink() else dirs).add((base / name).as_posix())
        files.update((base / name).as_posix() for name in names)
    return files, dirs


def _remove(path: Path) -> None:
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _make_special(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
        return
    # A bound UNIX socket leaves a socket file; AF_UNIX paths are limited to ~107 bytes, so bind
    # from inside the folder with a short relative name.
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(path.name)
    finally:
        os.chdir(cwd)
