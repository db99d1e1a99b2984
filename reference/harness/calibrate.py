"""Calibrate a task's quality target and reference convergence points from reference runs.

    python -m levelfield.reference.harness.calibrate --task ctr-dlrm --seeds 3 --out calibration/ctr-dlrm

Trains every framework with several seeds for the full `max_epochs` (no stop
at the target), records each evaluation curve, and proposes what the rules
need, as MLPerf picks targets just under the reference model's quality:

- target: the best value that every run reaches within max_epochs, rounded
  down to `--step` and lowered by `--margin`, so each framework reaches it
  reliably;
- reference convergence points: for each run, the first epoch at which it
  reached that target.

Writes calibration.json (curves and proposal) and prints the YAML to paste
into the task's rules file. Runs use the submission profile and write their
MLLOG files under --out; none of them is a result.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from levelfield.ground.fsutil import atomic_write_text
from levelfield.reference.harness.trainer import Trainer, TrainOptions

FRAMEWORKS = ("pytorch", "tensorflow", "jax")


def propose(curves: dict, step: float, margin: float) -> dict:
    """Target and per-run epochs-to-target from {framework: {seed: [[epoch, value], ...]}}."""
    best = [max(v for _, v in curve) for runs in curves.values() for curve in runs.values()]
    target = math.floor(min(best) / step) * step - margin
    target = round(target, 6)
    epochs = {
        fw: {seed: next((e for e, v in curve if v >= target), None) for seed, curve in runs.items()}
        for fw, runs in curves.items()
    }
    return {"target": target, "worst_best_value": min(best), "epochs_to_target": epochs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    parser.add_argument("--task", required=True)
    parser.add_argument("--frameworks", nargs="+", default=list(FRAMEWORKS))
    parser.add_argument("--seeds", type=int, default=3, help="runs per framework")
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--step", type=float, default=0.005, help="round the target down to this step")
    parser.add_argument("--margin", type=float, default=0.0, help="then lower it by this much")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--rules-dir",
        help="rules folder to read (default: the shipped rules); a copy keeps a "
        "long calibration safe from edits to the working tree",
    )
    args = parser.parse_args(argv)

    curves: dict = {}
    for fw in args.frameworks:
        curves[fw] = {}
        for i in range(args.seeds):
            seed = args.first_seed + i
            options = TrainOptions(
                task_id=args.task,
                framework=fw,
                out=args.out / fw / f"seed{seed}",
                runs=1,
                seed=seed,
                stop_at_target=False,
                force=True,
                rules_dir=args.rules_dir,
            )
            summary = Trainer(options).run()
            curves[fw][seed] = summary["runs"][0]["evals"]
            atomic_write_text(
                args.out / "calibration.json",
                json.dumps({"task": args.task, "curves": curves}, indent=2) + "\n",
                overwrite=True,
            )
    proposal = propose(curves, args.step, args.margin)
    atomic_write_text(
        args.out / "calibration.json",
        json.dumps({"task": args.task, "curves": curves, "proposal": proposal}, indent=2) + "\n",
        overwrite=True,
    )
    print(json.dumps(proposal, indent=2))
    return 0


def run(argv: list[str] | None = None) -> int:
    """main() with the CLI's error reporting: a user mistake is one line, not a traceback."""
    from levelfield.ground.errors import EXIT_USER_ERROR, UserError, report_error

    try:
        return main(argv)
    except UserError as error:
        report_error(error)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    raise SystemExit(run())
