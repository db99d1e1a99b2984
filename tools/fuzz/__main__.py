"""`python -m levelfield.tools.fuzz`: fuzz the checker and write the figures as JSON (see __init__.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from levelfield.ground.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USER_ERROR, UserError
from levelfield.ground.fsutil import atomic_write_text
from levelfield.tools.fuzz.run import FuzzOptions, replay, run_fuzz, run_sweep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m levelfield.tools.fuzz", description=__doc__)
    parser.add_argument("--inputs", type=int, default=10_000, help="generated inputs (default: 10000)")
    parser.add_argument("--seed", type=int, default=1, help="same seed, same inputs (default: 1)")
    parser.add_argument(
        "--example",
        type=Path,
        default=Path("submissions/example"),
        help="the clean tree to damage (default: submissions/example)",
    )
    parser.add_argument("--out", type=Path, help="write the report here as JSON (default: print it)")
    parser.add_argument(
        "--full-every",
        type=int,
        default=100,
        help="every N-th input is checked without parse reuse (0: none; default 100)",
    )
    parser.add_argument(
        "--cli-every",
        type=int,
        default=500,
        help="every N-th input also runs through `levelfield check` in a subprocess (0: no CLI runs; default 500)",
    )
    parser.add_argument("--work-dir", type=Path, help="where the working copy lives (default: the system's temp)")
    parser.add_argument("--replay", type=int, metavar="INDEX", help="check only input INDEX and print its report")
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="instead of random inputs, every hostile value in every field (~46,000 inputs on the example)",
    )
    parser.add_argument(
        "--mlcommons-training",
        type=Path,
        metavar="DIR",
        help="instead: damage copies of this MLCommons Training submitter folder (tools/fuzz/mlcommons.py)",
    )
    parser.add_argument("--mlcommons-ruleset", metavar="X.Y.Z", help="its ruleset (default: from the path)")
    args = parser.parse_args(argv)
    try:
        if args.mlcommons_training is not None:
            return _mlcommons(args)
        if args.replay is not None:
            return replay(args.example, args.seed, args.replay, args.work_dir)
        options = FuzzOptions(
            example=args.example,
            inputs=args.inputs,
            seed=args.seed,
            full_every=args.full_every,
            cli_every=args.cli_every,
            work_dir=args.work_dir,
            progress=True,
        )
        report = (run_sweep if args.sweep else run_fuzz)(options)
    except UserError as error:
        print(f"fuzz: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    _write(report, args.out)
    print(
        f"fuzz: {report['inputs']} inputs in {report['wall_s']} s: {report['crashes']} crashes, "
        f"{report['misses']} misses, {report['leaks']} leaks, {report['cli_share']['runs']} CLI runs "
        f"({report['cli_share']['problems']} problems): {'passed' if report['passed'] else 'FAILED'}",
        file=sys.stderr,
    )
    return EXIT_OK if report["passed"] else EXIT_FINDINGS


def _write(report: dict, out: Path | None) -> None:
    """The report as JSON: to `out` (atomically), or on stdout."""
    text = json.dumps(report, indent=2) + "\n"
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out, text, overwrite=True)
    else:
        print(text, end="")


def _mlcommons(args: argparse.Namespace) -> int:
    from levelfield.checker.mlcommons.training import ruleset_for
    from levelfield.tools.fuzz.mlcommons import fuzz_training_tree

    ruleset = ruleset_for(args.mlcommons_training, args.mlcommons_ruleset)
    report = fuzz_training_tree(args.mlcommons_training, args.inputs, args.seed, ruleset)
    _write(report, args.out)
    print(
        f"fuzz: {report['inputs']} damaged copies of {args.mlcommons_training} in {report['wall_s']} s: "
        f"{report['crashes']} crashes: {'passed' if report['passed'] else 'FAILED'}",
        file=sys.stderr,
    )
    return EXIT_OK if report["passed"] else EXIT_FINDINGS


if __name__ == "__main__":
    sys.exit(main())
