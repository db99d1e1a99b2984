"""`levelfield sign`: a detached Ed25519 signature over a submission tree's MANIFEST.

levelfield sign submission --key ~/.levelfield/acme
"""

from __future__ import annotations

import argparse
from pathlib import Path

from levelfield.cli.commands import add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "sign",
        help="sign a packaged submission tree (writes TREE/MANIFEST.sig)",
        description="Check that the tree matches its MANIFEST (every file listed, every digest right), then write "
        "MANIFEST.sig: the MANIFEST's SHA-256 and the signing time, signed with an Ed25519 key. Because the "
        "MANIFEST holds every file's digest, the signature covers the whole tree. Auditors verify it with "
        "`levelfield check TREE --trusted-keys FILE`. An existing signature is replaced only with --force.",
        examples=[
            "levelfield sign submission --key ~/.levelfield/acme",
            "levelfield check submission --trusted-keys acme.pub      verify it as an auditor would",
        ],
    )
    parser.add_argument("tree", type=Path, metavar="TREE", help="a tree written by `levelfield package`")
    parser.add_argument(
        "--key", required=True, type=Path, metavar="FILE", help="Ed25519 private key (levelfield keygen)"
    )
    parser.add_argument("--force", action="store_true", help="replace an existing MANIFEST.sig")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from levelfield.ground.signing import verify_document
    from levelfield.tools.sign import sign_tree

    path = sign_tree(args.tree, args.key, force=args.force)
    verdict = verify_document(path.read_bytes())
    print(f"signed {args.tree}: {path} ({verdict.key.fingerprint}, {verdict.signed_utc})")
    return 0
