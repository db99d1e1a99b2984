"""`levelfield package`: runs + a system description -> a submission tree with a MANIFEST.

levelfield package --runs runs/ --system systems/box.json --org acme --division closed --out submission
"""

from __future__ import annotations

import argparse
from pathlib import Path

from levelfield.cli.commands import add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "package",
        help="build a submission tree (with MANIFEST) from training and inference runs",
        description="Find the runs below each --runs folder (result_<i>.txt from `levelfield train`, result.json "
        "from `levelfield infer`), copy them unchanged into the submission layout "
        "(submissions/README.md) with the system description, an environment capture per result, a "
        "code reference and a MANIFEST of SHA-256 digests. Built in a temporary folder and renamed "
        "into place; an existing --out is never replaced without --force.",
        examples=[
            "levelfield package --runs runs/ --system systems/box.json --org acme --division closed --out submission",
            "levelfield package --runs runs/train runs/infer --system systems/box.json --org acme "
            "--division open --code my-code/ --out submission",
            "levelfield check submission                     then check what was built",
        ],
    )
    parser.add_argument(
        "--runs",
        nargs="+",
        required=True,
        type=Path,
        metavar="DIR",
        help="folders holding run folders (searched recursively; links are not followed)",
    )
    parser.add_argument(
        "--system",
        required=True,
        type=Path,
        metavar="FILE",
        help="filled-in system description; its file name is the system id",
    )
    parser.add_argument("--org", required=True, help="submitting organisation (a folder name)")
    parser.add_argument("--division", required=True, choices=["closed", "open"])
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="the submission tree to create")
    parser.add_argument("--code", type=Path, metavar="DIR", help="open division: your code, copied to code/src/")
    parser.add_argument("--force", action="store_true", help="replace an existing --out")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from levelfield.tools.package import PackageOptions, package

    out = package(
        PackageOptions(
            runs=args.runs,
            system=args.system,
            org=args.org,
            division=args.division,
            out=args.out,
            force=args.force,
            code=args.code,
        )
    )
    print(f"submission tree written to {out}/ (check it with `levelfield check {out}`)")
    return 0
