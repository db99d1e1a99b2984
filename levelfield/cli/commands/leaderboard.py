"""`levelfield leaderboard`: tables with statistics from clean submission trees (md, csv, json, html).

levelfield leaderboard submissions/example
levelfield leaderboard rounds/2026-11 --format html --out rounds/2026-11/leaderboard.html   (every tree below)
levelfield leaderboard subs/acme subs/globex --format html --out leaderboard.html
levelfield leaderboard submissions/example --format json --out leaderboard.json --force
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from levelfield.cli.commands import (
    add_checked_profile_option,
    add_command,
    add_data_dir_option,
    add_rules_options,
    add_trusted_keys_option,
)
from levelfield.tools.leaderboard import FORMATS  # the package's __init__ imports only json and pathlib


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "leaderboard",
        help="tables with statistics from clean submission trees (md, csv, json, html)",
        description="Check every submission tree as `levelfield check` does; build tables per task from the trees "
        "that check clean (no error finding) and list every other tree with its finding codes. "
        "Training: olympic-mean time to target (a single run's time where there is one run) with "
        "its 95% CI and a Welch test against the fastest "
        "framework on the same system; inference: each LoadGen scenario's metric and the accuracy. "
        "A DIR that is not a tree is searched for trees below it (up to 4 levels). "
        "JSON is the canonical form (schema: rules/schemas/leaderboard.schema.json); the HTML page "
        "is self-contained (inline SVG charts, nothing fetched). See docs/leaderboard.md.",
        examples=[
            "levelfield leaderboard submissions/example                  Markdown on stdout",
            "levelfield leaderboard subs/acme subs/globex --format html --out leaderboard.html",
            "levelfield leaderboard rounds/2026-11 --format html --out lb.html   every tree below the folder",
            "levelfield leaderboard submissions/example --format json --out lb.json --force",
            "levelfield leaderboard submissions/example --format csv > leaderboard.csv",
            "levelfield leaderboard DIR --strict     exit 1 when a tree is left out for its findings",
            "levelfield leaderboard DIR... --trusted-keys vendors.pub   only trees signed by a trusted key",
            "levelfield leaderboard training_results_v4.0 --format html --out mlperf.html   MLCommons Training trees",
            "levelfield leaderboard demo-out/submission --profile demo   the demo's tables, labelled as a demo",
        ],
    )
    parser.add_argument(
        "dirs",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="submission trees (each holds a MANIFEST), or folders holding them: every tree below such a folder "
        "is ranked (a publisher's folder per round)",
    )
    parser.add_argument("--format", choices=FORMATS, default="md", help="output format (default: md)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write here (atomically) instead of stdout")
    parser.add_argument("--force", action="store_true", help="replace --out when it exists")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when any tree is left out for its findings (default: 0, the tree is listed)",
    )
    add_data_dir_option(parser, ", for re-scoring accuracy logs")
    add_checked_profile_option(parser)
    add_trusted_keys_option(parser)
    parser.add_argument(
        "--mlcommons-ruleset",
        metavar="X.Y.Z",
        help="MLCommons trees: the Training ruleset (4.0.0) or the Inference round (4.1) (default: from a "
        "training_results_vX.Y or inference_results_vX.Y folder in the path; Inference: else the LoadGen version)",
    )
    add_rules_options(parser)
    parser.set_defaults(func=run)


def _refuse_out_inside_a_tree(out: Path, dirs: list[Path]) -> None:
    from levelfield.ground.errors import UserError

    target = out.resolve()
    for tree in dirs:
        if target.is_relative_to(tree.resolve()):
            raise UserError(
                f"--out {out}: inside the submission tree {tree}; a file added there would make "
                "the tree fail its MANIFEST check",
                hint="write the leaderboard outside every DIR",
            )


def run(args: argparse.Namespace) -> int:
    from levelfield.ground.errors import EXIT_FINDINGS, EXIT_OK, UserError
    from levelfield.ground.fsutil import atomic_write_text
    from levelfield.ground.signing import read_trusted_keys
    from levelfield.tools.leaderboard import build, render
    from levelfield.tools.leaderboard.collect import find_trees
    from levelfield.tools.leaderboard.render_md import MLCOMMONS_SECTIONS, clean_mlcommons_trees

    if args.out is not None:
        if args.out.is_dir():
            raise UserError(f"--out {args.out}: is a folder (expected a file name)")
        if args.out.exists() and not args.force:  # refused before minutes of checking, not after
            raise UserError(f"{args.out}: already exists; not overwriting it", hint="pass --force to replace it")
        _refuse_out_inside_a_tree(args.out, find_trees(args.dirs))  # a round's folder may hold the page
    doc = build(
        args.dirs,
        rules_dir=args.rules_dir,
        rules_version=args.rules_version,
        data_dir=args.data_dir,
        profile=args.profile,
        trusted_keys=read_trusted_keys(args.trusted_keys) if args.trusted_keys else None,
        mlcommons_ruleset=args.mlcommons_ruleset,
    )
    text = render(doc, args.format)
    if args.out is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(args.out, text, overwrite=args.force)
        mlcommons_trees = clean_mlcommons_trees(doc)
        mlcommons_rows = sum(len(doc[key]["rows"]) for key in MLCOMMONS_SECTIONS if key in doc)
        print(
            f"wrote {args.out} ({args.format}: {len(doc['training'])} training, {len(doc['inference'])} inference "
            f"and {mlcommons_rows} MLCommons rows from {len(doc['submissions']) + len(mlcommons_trees)} clean "
            "tree(s))",
            file=sys.stderr,
        )
    for tree in doc["excluded"]:
        codes = ", ".join(tree["codes"])
        print(
            f"levelfield: left out {tree['path']}: findings {codes} (levelfield check {tree['path']})", file=sys.stderr
        )
    return EXIT_FINDINGS if args.strict and doc["excluded"] else EXIT_OK
