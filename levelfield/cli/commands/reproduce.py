"""`levelfield reproduce`: re-run one result of a submission tree and judge the submission against it.

levelfield reproduce submissions/example                         list the tree's result ids
levelfield reproduce submissions/example --result trn-... --out repro
"""

from __future__ import annotations

import argparse
from pathlib import Path

from levelfield.cli.commands import add_command, add_data_dir_option
from levelfield.cli.reproduce.options import SEED_CHOICES


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "reproduce",
        help="re-run one result of a tree from what it records (exit 0 reproduced, 1 not, 2 could not run)",
        description="Read the tree (nothing in it is executed), take the result's recorded settings (rules version, "
        "task, framework, compile mode, profile, seeds, tunable hyperparameters), re-run it with the reference "
        "implementation on this machine and judge the submission against the reproduction. Training: the "
        "submission's olympic mean of epochs to target must not be below what the reproduction allows "
        "(rules 1.1's reference-convergence test, the reproduction as reference), and on the same hardware "
        "its time to target must not be faster beyond the runs' noise. Training throughput (rules 1.2, on the "
        "same hardware only): the submission's mean samples/s may exceed the reproduction's by at most the "
        "rules' replication tolerance. Inference: the accuracy from the "
        "weights the tree names by SHA-256 must match exactly. Environment differences are listed first. "
        "Writes OUT/reproduction.json and prints a one-paragraph verdict. docs/audit.md has the workflow.",
        examples=[
            "levelfield reproduce submissions/example                     list the result ids (the leaderboard's)",
            "levelfield reproduce submissions/example --result trn-5c1e0a7f9b --out repro",
            "levelfield reproduce TREE --result trn-... --seeds fresh --out repro   new seeds, same recipe",
            "levelfield reproduce TREE --result inf-... --weights weights_0.npz --out repro",
            "levelfield reproduce TREE --result tpt-... --out repro        a training-throughput result, same host",
        ],
    )
    parser.add_argument("tree", type=Path, metavar="TREE", help="a submission tree")
    parser.add_argument("--result", metavar="ID", help="the result's id (without it: list the ids)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="folder for the reproduction's runs and report")
    parser.add_argument(
        "--seeds",
        choices=SEED_CHOICES,
        default="recorded",
        help="training and training throughput: replay the logged seeds (default) or draw fresh ones",
    )
    parser.add_argument("--weights", type=Path, metavar="FILE", help="inference: the weights file the result used")
    parser.add_argument(
        "--accuracy-only", action="store_true", help="inference: replay the accuracy runs only, not the timed ones"
    )
    add_data_dir_option(parser)
    parser.add_argument("--rules-dir", metavar="DIR", help="folder holding rules versions (default: the shipped rules)")
    parser.add_argument("--force", action="store_true", help="replace a non-empty --out")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from levelfield.cli.reproduce.main import reproduce
    from levelfield.cli.reproduce.options import ReproduceOptions
    from levelfield.cli.reproduce.recipe import open_tree
    from levelfield.cli.reproduce.report import verdict_paragraph
    from levelfield.ground.errors import EXIT_FINDINGS, EXIT_OK, UserError

    if args.result is None:
        tree = open_tree(args.tree, args.rules_dir)
        for result in tree.results.values():
            print(f"{result.id}  {result.kind:10}  {result.system}  {result.task}  {result.framework}")
        return EXIT_OK
    if args.out is None:
        raise UserError("--out DIR is required with --result (the reproduction's runs and report go there)")
    document = reproduce(
        ReproduceOptions(
            tree=args.tree,
            result=args.result,
            out=args.out,
            seeds=args.seeds,
            weights=args.weights,
            accuracy_only=args.accuracy_only,
            data_dir=args.data_dir,
            rules_dir=args.rules_dir,
            force=args.force,
        )
    )
    print(verdict_paragraph(document))
    print(f"report: {args.out / 'reproduction.json'}")
    return EXIT_OK if document["reproduced"] else EXIT_FINDINGS
