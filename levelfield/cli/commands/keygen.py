"""`levelfield keygen`: an Ed25519 key pair for signing submission trees.

levelfield keygen --out ~/.levelfield/acme --name acme-results
"""

from __future__ import annotations

import argparse
from pathlib import Path

from levelfield.cli.commands import add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "keygen",
        help="make an Ed25519 key pair for `levelfield sign` (private key written 0600)",
        description="Write an Ed25519 private key to --out (OpenSSH format, created with mode 0600, unencrypted "
        "as `ssh-keygen -N ''` writes it) and its public key line to --out.pub. Give auditors the .pub line "
        "(they collect such lines in a trusted-keys file); keep the private key outside every submission "
        "tree: `levelfield package` and `levelfield sign` refuse a tree that holds one. A key made by "
        "`ssh-keygen -t ed25519` works as well.",
        examples=[
            "levelfield keygen --out ~/.levelfield/acme --name acme-results",
            "levelfield sign submission --key ~/.levelfield/acme",
            "cat ~/.levelfield/acme.pub >> trusted.pub          (the auditor's side)",
        ],
    )
    parser.add_argument("--out", required=True, type=Path, metavar="FILE", help="private key file; FILE.pub beside it")
    parser.add_argument("--name", default="", help="a label stored after the public key (e.g. the organisation)")
    parser.add_argument("--force", action="store_true", help="replace existing key files")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from levelfield.ground.signing import generate_key_pair

    pub_path, key = generate_key_pair(args.out, args.name, force=args.force)
    print(f"private key: {args.out} (mode 0600; never put it in a submission tree)")
    print(f"public key:  {pub_path}  {key.fingerprint}")
    return 0
