"""Ed25519 signatures over a submission tree's MANIFEST: key files, signing, verifying.

    levelfield keygen --out keys/acme                   keys/acme (private, 0600) + keys/acme.pub
    levelfield sign submission --key keys/acme          writes submission/MANIFEST.sig
    levelfield check submission --trusted-keys trusted.pub

The MANIFEST lists the SHA-256 of every other file, so one signature over it
covers the whole tree: a file changed after signing no longer matches its
MANIFEST line (STR006), and a MANIFEST rewritten to match no longer matches
the digest the signature covers (SIG004).

Keys are OpenSSH's Ed25519 formats, so a vendor may sign with a key made by
`ssh-keygen -t ed25519` and an auditor's trusted-keys file reads like
`authorized_keys`: one `ssh-ed25519 AAAA... name` line per key, `#` comments.
A key is named by its fingerprint as `ssh-keygen -l` prints it
(`SHA256:` + unpadded base64 of the SHA-256 of the key blob).

MANIFEST.sig is JSON. The signature covers the canonical JSON (sorted keys,
no spaces) of every other field, so the signed MANIFEST digest, the key and
the time cannot be swapped without breaking it. All cryptography is the
`cryptography` library's; nothing here is hand-written crypto.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from levelfield.ground.errors import UserError

SIGNATURE_FORMAT = "levelfield-manifest-signature-1"
KEY_TYPE = "ssh-ed25519"
# What a PEM or OpenSSH private key starts with ("-----BEGIN OPENSSH PRIVATE KEY-----",
# "-----BEGIN PRIVATE KEY-----", "-----BEGIN ENCRYPTED PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----").
PRIVATE_KEY_MARKER = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")
MAX_KEY_FILE_BYTES = 64 * 1024


@dataclass(frozen=True)
class PublicKey:
    line: str  # "ssh-ed25519 AAAA... name", as written in .pub files
    fingerprint: str  # "SHA256:..." as ssh-keygen -l prints it

    @property
    def name(self) -> str:
        parts = self.line.split(maxsplit=2)
        return parts[2] if len(parts) > 2 else ""


@dataclass(frozen=True)
class Verdict:
    """What a signature file says about a tree, before any trust decision."""

    problem: str | None  # why the signature is not valid; None when it verifies
    key: PublicKey | None = None  # the signing key, when the file names a readable one
    signed_manifest_sha256: str | None = None
    signed_utc: str | None = None


def fingerprint(blob: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def parse_public_key(line: str, where: str) -> PublicKey:
    """One `ssh-ed25519 <base64> [name]` line; UserError naming `where` for anything else."""
    parts = line.split(maxsplit=2)
    if len(parts) < 2 or parts[0] != KEY_TYPE:
        raise UserError(f"{where}: found {line[:60]!r}, expected an Ed25519 public key line '{KEY_TYPE} AAAA... name'")
    try:
        key = serialization.load_ssh_public_key(f"{parts[0]} {parts[1]}".encode())
        blob = base64.b64decode(parts[1], validate=True)
    except (ValueError, UnsupportedAlgorithm) as e:
        raise UserError(f"{where}: not a readable {KEY_TYPE} key ({e})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UserError(f"{where}: found a {type(key).__name__}, expected an Ed25519 key")
    return PublicKey(" ".join(parts), fingerprint(blob))


def read_trusted_keys(path: Path) -> list[PublicKey]:
    """Every key of an authorized_keys-style file; UserError (file and line) on a line that is not one."""
    text = _read_small(path, "trusted-keys file")
    keys = [
        parse_public_key(line.strip(), f"{path}:{lineno}")
        for lineno, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not keys:
        raise UserError(f"{path}: holds no key (expected one '{KEY_TYPE} AAAA... name' line per trusted key)")
    return keys


def _read_small(path: Path, what: str) -> str:
    try:
        if path.stat().st_size > MAX_KEY_FILE_BYTES:
            raise UserError(f"{path}: {path.stat().st_size} bytes; a {what} is under {MAX_KEY_FILE_BYTES} bytes")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read the {what} ({e})") from None


def generate_key_pair(out: Path, name: str, force: bool = False) -> tuple[Path, PublicKey]:
    """Write `out` (OpenSSH private key, mode 0600, created so) and `out`.pub; returns the .pub path and key."""
    pub_path = out.with_name(out.name + ".pub")
    for path in (out, pub_path):
        if path.exists() and not force:
            raise UserError(f"{path}: already exists; not overwriting a key", hint="choose another --out, or --force")
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    out.parent.mkdir(parents=True, exist_ok=True)
    if force:
        out.unlink(missing_ok=True)
    # Created 0600 from the start (never world-readable, not even for a moment), O_EXCL so a file
    # that appeared meanwhile is not replaced.
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(private)
    line = f"{public.decode()} {name}".strip()
    pub_path.write_text(line + "\n", encoding="utf-8")
    return pub_path, parse_public_key(line, str(pub_path))


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in `path` (OpenSSH or PKCS#8 PEM, unencrypted); refuses a file others can read."""
    data = _read_small(path, "private key").encode()
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise UserError(
            f"{path}: permissions {oct(mode)}, expected 0600 or stricter (a private key others can read is leaked)",
            hint=f"chmod 600 {path}",
        )
    loaders = (serialization.load_ssh_private_key, serialization.load_pem_private_key)
    for loader in loaders:
        try:
            key = loader(data, password=None)
            break
        except (ValueError, TypeError, UnsupportedAlgorithm):
            continue
    else:
        raise UserError(
            f"{path}: not an unencrypted Ed25519 private key (expected OpenSSH or PKCS#8 PEM)",
            hint="make one with `levelfield keygen --out FILE` or `ssh-keygen -t ed25519 -N ''`",
        )
    if not isinstance(key, Ed25519PrivateKey):
        raise UserError(f"{path}: found a {type(key).__name__}, expected an Ed25519 key")
    return key


def _signed_bytes(fields: dict) -> bytes:
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


def signature_document(manifest: bytes, key: Ed25519PrivateKey, now: dt.datetime | None = None) -> str:
    """MANIFEST.sig's text for `manifest` signed with the private `key`."""
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    fields = {
        "format": SIGNATURE_FORMAT,
        "public_key": public.decode(),
        "manifest_sha256": hashlib.sha256(manifest).hexdigest(),
        "signed_utc": (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    signature = base64.b64encode(key.sign(_signed_bytes(fields))).decode()
    return json.dumps({**fields, "signature": signature}, indent=2, sort_keys=True) + "\n"


def verify_document(data: bytes) -> Verdict:
    """Whether MANIFEST.sig's bytes hold a valid signature, and by which key over which MANIFEST digest."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return Verdict(f"not a JSON signature file ({e})")
    fields = ("format", "public_key", "manifest_sha256", "signed_utc", "signature")
    if not isinstance(doc, dict) or sorted(doc) != sorted(fields) or not all(isinstance(doc[f], str) for f in fields):
        return Verdict(f"expected a JSON object with the string fields {', '.join(fields)}")
    if doc["format"] != SIGNATURE_FORMAT:
        return Verdict(f"format {doc['format']!r}, expected {SIGNATURE_FORMAT!r}")
    try:
        key = parse_public_key(doc["public_key"], "public_key")
        signature = base64.b64decode(doc["signature"], validate=True)
    except (UserError, ValueError) as e:
        return Verdict(f"unreadable key or signature ({e})")
    signed = {f: doc[f] for f in fields if f != "signature"}
    try:
        serialization.load_ssh_public_key(doc["public_key"].encode()).verify(signature, _signed_bytes(signed))
    except InvalidSignature:
        return Verdict("the signature does not verify with the key it names", key)
    return Verdict(None, key, doc["manifest_sha256"], doc["signed_utc"])


def private_key_paths(files: dict[str, bytes]) -> list[str]:
    """The paths among {path: bytes} whose content holds a private key."""
    return sorted(path for path, data in files.items() if PRIVATE_KEY_MARKER.search(data))
