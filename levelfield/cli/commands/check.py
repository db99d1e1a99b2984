"""`levelfield check`: the submission checker.

levelfield check submissions/example
levelfield check DIR --format json > findings.json
levelfield check DIR --select TRN,REP --ignore TRN009
levelfield check DIR --waivers waivers.yaml
levelfield check DIR --trusted-keys trusted.pub
levelfield check --list
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from levelfield.cli.commands import (
    add_checked_profile_option,
    add_command,
    add_data_dir_option,
    add_rules_options,
    add_trusted_keys_option,
)


def _codes(text: str) -> list[str]:
    return [part.strip().upper() for part in text.split(",") if part.strip()]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "check",
        help="check a submission tree against the rules (exit 0 clean, 1 findings, 2 error)",
        description="Walk a submission tree (never following links or executing anything in it), load every "
        "file into typed records and run every registered check. Each finding reads "
        "`path[:line]: CODE message (found X, expected Y)` with a hint. Exit 0: clean; 1: findings "
        "of severity error; 2: the check could not run. docs/checks.md documents every code.",
        examples=[
            "levelfield check submissions/example",
            "levelfield check DIR --format json > findings.json",
            "levelfield check DIR --select TRN,REP --ignore TRN009",
            "levelfield check DIR --waivers waivers.yaml      (each waiver carries a reason)",
            "levelfield check DIR --trusted-keys trusted.pub  the tree must be signed by one of these keys",
            "levelfield check demo-out/submission --profile demo   (the demo's tree, judged as a demo)",
            "levelfield check training_results_v4.0/NVIDIA     an MLCommons Training submitter folder, scored",
            "levelfield check inference_results_v4.1          an MLCommons Inference tree, each result's metric",
            "levelfield check --list                          every check: code, name, severity",
        ],
    )
    parser.add_argument(
        "dir",
        nargs="?",
        type=Path,
        metavar="DIR",
        help="the submission tree (holds MANIFEST), or an MLCommons Training or Inference tree",
    )
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument(
        "--select",
        type=_codes,
        default=[],
        metavar="CODES",
        help="comma-separated codes or prefixes to run (default: all)",
    )
    parser.add_argument(
        "--ignore", type=_codes, default=[], metavar="CODES", help="comma-separated codes or prefixes not to run"
    )
    parser.add_argument("--waivers", type=Path, metavar="FILE", help="YAML waivers file (schema: waivers)")
    add_data_dir_option(parser, ", for re-scoring accuracy logs")
    add_trusted_keys_option(parser)
    parser.add_argument(
        "--layout",
        choices=["levelfield", "mlcommons-training", "mlcommons-inference"],
        help="the tree's layout (default: recognised from its folders)",
    )
    parser.add_argument(
        "--mlcommons-ruleset",
        metavar="X.Y.Z",
        help="MLCommons trees: the Training ruleset (4.0.0) or the Inference round (4.1) (default: from a "
        "training_results_vX.Y or inference_results_vX.Y folder in the path; Inference: else the LoadGen version)",
    )
    parser.add_argument("--no-hints", action="store_true", help="text format: omit the hint lines")
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    add_checked_profile_option(parser)
    add_rules_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from levelfield.checker.engine import check_tree, load_waivers, selected_codes
    from levelfield.checker.findings import REGISTRY
    from levelfield.ground.errors import EXIT_OK, UserError
    from levelfield.ground.signing import read_trusted_keys

    if args.list:
        for code in selected_codes(args.select, args.ignore):
            check = REGISTRY[code]
            print(f"{code}  {check.name:32} {check.severity:8} {check.doc_section('What:')[:90]}")
        return EXIT_OK
    if args.dir is None:
        raise UserError("no submission folder given (expected: levelfield check DIR)")
    from levelfield.checker.mlcommons.layout import INFERENCE, TRAINING, detect_layout

    layout = args.layout or detect_layout(args.dir)
    if layout == TRAINING:
        from levelfield.checker.mlcommons.training import check_training_tree

        return _print(check_training_tree(args.dir, args.mlcommons_ruleset), args)
    if layout == INFERENCE:
        from levelfield.checker.mlcommons.inference import check_inference_tree

        return _print(check_inference_tree(args.dir, args.mlcommons_ruleset), args)
    waivers = load_waivers(args.waivers) if args.waivers else []
    trusted_keys = read_trusted_keys(args.trusted_keys) if args.trusted_keys else None
    report = check_tree(
        args.dir,
        rules_dir=args.rules_dir,
        rules_version=args.rules_version,
        select=args.select,
        ignore=args.ignore,
        waivers=waivers,
        data_dir=args.data_dir,
        profile=args.profile,
        trusted_keys=trusted_keys,
    )
    return _print(report, args)


def _print(report, args: argparse.Namespace) -> int:
    from levelfield.checker.report import json_report, text_report
    from levelfield.ground.errors import EXIT_FINDINGS, EXIT_OK

    if args.format == "json":
        print(json.dumps(json_report(report), indent=2))
    else:
        print(text_report(report, hints=not args.no_hints))
    return EXIT_FINDINGS if report.failed else EXIT_OK
