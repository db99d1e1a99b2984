"""Sign a packaged submission tree: `levelfield sign`.

    from levelfield.tools.sign import sign_tree
    sign_tree(Path("submission"), Path("keys/acme"))     # writes submission/MANIFEST.sig

Only a tree that matches its MANIFEST is signed (every file listed with its
digest, nothing unlisted): a signature vouches for what the MANIFEST says, so
signing a tree that already differs from it would vouch for files nobody
packaged. A tree holding a private key is refused: it would publish the key.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from levelfield.ground import layout as L
from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import atomic_write_text
from levelfield.ground.signing import load_private_key, private_key_paths, signature_document

MAX_REPORTED = 5  # mismatches named in the error; the rest are counted


def tree_files(root: Path) -> dict[str, Path]:
    """{relative '/'-path: path} of the tree's regular files; UserError on a link (never followed)."""
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            raise UserError(f"{path}: a symbolic link in the tree (expected regular files only)")
        if path.is_file():
            files[path.relative_to(root).as_posix()] = path
    return files


def manifest_mismatches(root: Path, files: dict[str, bytes]) -> list[str]:
    """How the tree differs from its MANIFEST, one line per file ([] when it matches)."""
    listed = {}
    for lineno, line in enumerate((root / L.MANIFEST).read_text(encoding="utf-8").splitlines(), start=1):
        digest, sep, rel = line.partition("  ")
        if not sep:
            return [f"{L.MANIFEST}:{lineno}: expected '<sha256>  <path>'"]
        listed[rel] = digest
    problems = [f"{rel}: listed in {L.MANIFEST}, not in the tree" for rel in listed if rel not in files]
    for rel, data in files.items():
        if rel in (L.MANIFEST, L.SIGNATURE):
            continue
        if rel not in listed:
            problems.append(f"{rel}: not listed in {L.MANIFEST}")
        elif hashlib.sha256(data).hexdigest() != listed[rel]:
            problems.append(f"{rel}: content differs from its {L.MANIFEST} digest")
    return problems


def sign_tree(root: Path, key_path: Path, force: bool = False) -> Path:
    """Write root/MANIFEST.sig; returns its path. UserError when the tree cannot be signed as it is."""
    if not (root / L.MANIFEST).is_file():
        raise UserError(f"{root}: no {L.MANIFEST} (expected a tree written by `levelfield package`)")
    target = root / L.SIGNATURE
    if target.exists() and not force:
        raise UserError(f"{target}: already exists; not replacing a signature", hint="pass --force to re-sign")
    key = load_private_key(key_path)
    files = {rel: path.read_bytes() for rel, path in tree_files(root).items()}  # each file read once
    problems = manifest_mismatches(root, files)
    if problems:
        more = f" (and {len(problems) - MAX_REPORTED} more)" if len(problems) > MAX_REPORTED else ""
        raise UserError(
            f"{root}: the tree does not match its {L.MANIFEST}, not signing: "
            + "; ".join(problems[:MAX_REPORTED])
            + more,
            hint="re-run `levelfield package` (it writes the MANIFEST), check the tree, then sign",
        )
    leaked = private_key_paths(files)
    if leaked:
        raise UserError(
            f"{root}: holds a private key in {', '.join(leaked)}; signing would publish it",
            hint="remove the key from the tree and re-package; keep private keys outside every submission",
        )
    atomic_write_text(target, signature_document((root / L.MANIFEST).read_bytes(), key), overwrite=True)
    return target
