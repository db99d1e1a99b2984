"""Calibrate a task: reference runs per framework, seed and batch size, kept as data; a target and RCPs from them.

    levelfield calibrate --task seq-transformer --rules-version 1.1 \\
        --seeds 5 --batch-sizes 256 512 --stop-above 0.999 --runs-dir build/calibration

(also `python -m levelfield.harness.calibrate ...`, the same options).

Every (framework, batch size, seed) is one reference run with the submission
profile's recipe (only the global batch size varies), trained until an eval
reaches `--stop-above` or for all max_epochs: curves that reach past any target
worth proposing. Each finished run is one JSON line of the calibration file
(default: the rules version's `calibration/<task>.jsonl`, committed next to the
rules as data). The tool is resumable: a run whose line exists is never run
again, so a stopped calibration picks up where it was, and runs are taken
seed-major (seed 1 of every framework and batch size, then seed 2...), so even
a partial file covers every group.

Then, from the file (also alone: `--propose-only`):
- target: by the rule the task file states, the highest multiple of `--step`
  that at least `--reach` (default 95%) of the runs reach before max_epochs (at
  most the stop value), lowered by `--margin` (default one step), so the target
  sits below the reference runs' plateau rather than at it (as MLPerf sets
  targets just under the reference quality);
- reference convergence points: per batch size and framework, each run's epoch
  (a fraction under rules 1.1's sample cadence) of its first eval at the target.
It prints them as the YAML to paste into the task file; tests hold the task
file to the calibration file (tests/test_calibration_data.py).

None of these runs is a result: their MLLOG files go to --runs-dir, never into
a submission tree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import socket
from pathlib import Path

from levelfield.ground.fsutil import atomic_write_text, read_text_limited
from levelfield.ground.training_log import reaches_target

FRAMEWORKS = ("pytorch", "tensorflow", "jax")
REACH = 0.95  # share of reference runs that must reach a proposed target before max_epochs
KEY_FIELDS = ("framework", "global_batch_size", "seed")


def run_key(record: dict) -> tuple:
    return tuple(record[k] for k in KEY_FIELDS)


def read_records(path: Path) -> list[dict]:
    """The calibration file's runs, one JSON object per line; [] when the file does not exist yet."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in read_text_limited(path).splitlines() if line.strip()]


def write_records(path: Path, records: list[dict]) -> None:
    """The whole file, atomically, in a stable order, so an interrupted write loses nothing."""
    ordered = sorted(records, key=run_key)
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in ordered)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text, overwrite=True)


SEED_STRIDE = 1000  # framework k of the suite's list draws seeds first_seed + k * SEED_STRIDE + i


def planned_runs(
    frameworks: list[str], batch_sizes: list[int], runs: int, first_seed: int, suite_frameworks: list[str]
) -> list[tuple[str, int, int]]:
    """Every (framework, batch size, seed), seed-major: a partial calibration covers every group.

    Each framework gets its own seeds: the three implementations compute the same network from the same
    seed, so runs with one seed in three frameworks are one sample of the seed distribution, not three,
    and the convergence test (levelfield/ground/rcp.py) counts runs as independent samples."""
    return [
        (fw, batch, first_seed + suite_frameworks.index(fw) * SEED_STRIDE + i)
        for i in range(runs)
        for batch in batch_sizes
        for fw in frameworks
    ]


def first_epoch_at(evals: list, target: float) -> int | float | None:
    """The epoch_num of a curve's first eval at the target (None when it never reaches it)."""
    return next((epoch for epoch, value in evals if reaches_target(value, target)), None)


def propose(records: list[dict], step: float, reach: float = REACH, margin: float | None = None) -> dict:
    """Target by the rule (highest multiple of `step` that a `reach` share of the runs reaches, at most
    every run's stop value, lowered by `margin`, default one step) and, per batch size and framework,
    each run's epochs to it."""
    margin = step if margin is None else margin
    if not records:
        raise ValueError("no calibration runs to propose from")
    ceiling = min(r["stop_value"] if r["stop_value"] is not None else 1.0 for r in records)
    best = sorted(max((v for _, v in r["evals"] if math.isfinite(v)), default=-math.inf) for r in records)
    # The value that `reach` of the runs reach: the best of the run at the (1 - reach) quantile from below.
    allowed_misses = math.floor((1 - reach) * len(best) + 1e-9)
    reached_by_enough = best[allowed_misses]
    target = round(math.floor(min(reached_by_enough, ceiling) / step + 1e-9) * step - margin, 6)
    points: dict[int, dict[str, list]] = {}
    for r in sorted(records, key=run_key):
        epochs = first_epoch_at(r["evals"], target)
        points.setdefault(r["global_batch_size"], {}).setdefault(r["framework"], []).append(epochs)
    reached = sum(e is not None for fws in points.values() for runs in fws.values() for e in runs)
    return {
        "target": target,
        "rule": f"the highest multiple of {step} that at least {reach:.0%} of the reference runs reach before "
        f"max_epochs, lowered by {margin}",
        "runs": len(records),
        "runs_reaching_target": reached,
        "points": [{"global_batch_size": b, "epochs_to_target": fws} for b, fws in sorted(points.items())],
    }


def _record(options, summary: dict, batch: int) -> dict:
    """One calibration file line: the run's identity, the recipe it departed from the defaults with,
    its curve and where the code stood."""
    from levelfield.ground.git_state import git_state

    run = summary["runs"][0]
    return {
        "task": summary["task"],
        "rules_version": summary["rules_version"],
        "framework": summary["framework"],
        "mode": summary["mode"],
        "profile": options.profile,
        "global_batch_size": batch,
        "overrides": options.overrides,
        "seed": run["seed"],
        "stop_value": options.calibration_stop,
        "status": run["status"],
        "reason": run["reason"],
        "evals": run["evals"],
        "epochs_trained": run["epochs"],
        "code_commit": git_state().get("commit"),  # the levelfield checkout the run used
        "host": socket.gethostname(),
        "finished_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def recipe_for(args: argparse.Namespace, batch: int) -> dict:
    """The reference recipe at `batch`: the rules' defaults with this global batch size, and with
    --lr-scales-with-batch the default learning rate scaled linearly with it (the tasks whose README
    says their reference learning rate follows the batch)."""
    overrides = {"global_batch_size": batch}
    if args.lr_scales_with_batch:
        tunable = args.tunable
        scale = batch / tunable["global_batch_size"]["default"]
        overrides["learning_rate"] = tunable["learning_rate"]["default"] * scale
    return overrides


def calibrate(args: argparse.Namespace, path: Path) -> list[dict]:
    """Run every planned run whose line is missing from `path`, appending each as it finishes."""
    from levelfield.harness.options import TrainOptions
    from levelfield.harness.trainer import Trainer

    records = read_records(path)
    done = {run_key(r) for r in records}
    plan = planned_runs(args.frameworks, args.batch_sizes, args.seeds, args.first_seed, args.suite_frameworks)
    todo = [k for k in plan if k not in done]
    print(f"calibration {path}: {len(done)} runs on file, {len(todo)} to run", flush=True)
    for i, (framework, batch, seed) in enumerate(todo, start=1):
        print(f"[{i}/{len(todo)}] {args.task} {framework} batch {batch} seed {seed}", flush=True)
        options = TrainOptions(
            task_id=args.task,
            framework=framework,
            out=args.runs_dir / framework / f"batch{batch}" / f"seed{seed}",
            profile=args.profile,
            runs=1,
            seed=seed,
            stop_at_target=False,
            calibration_stop=args.stop_above,
            force=True,
            rules_dir=args.rules_dir,
            rules_version=args.rules_version,
            overrides=recipe_for(args, batch),
        )
        summary = Trainer(options).run()
        if summary["interrupted_by"]:
            print(f"interrupted by {summary['interrupted_by']}: the run is not kept; rerun to resume", flush=True)
            break
        records.append(_record(options, summary, batch))
        write_records(path, records)
    return records


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `levelfield calibrate` (and of `python -m levelfield.harness.calibrate`)."""
    parser.add_argument("--task", required=True)
    parser.add_argument("--frameworks", nargs="+", default=list(FRAMEWORKS))
    parser.add_argument("--batch-sizes", nargs="+", type=int, help="global batch sizes (default: the rules' default)")
    parser.add_argument("--seeds", type=int, default=5, help="runs per framework and batch size (distinct seeds)")
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument(
        "--lr-scales-with-batch",
        action="store_true",
        help="scale the default learning rate linearly with the batch size (the task's reference recipe)",
    )
    parser.add_argument("--stop-above", type=float, help="stop a run once an eval reaches this value")
    parser.add_argument(
        "--step", type=float, help="propose a target on this grid (default: the task's target_rule, else 0.005)"
    )
    parser.add_argument(
        "--reach",
        type=float,
        help=f"share of runs that must reach the target (default: the task's target_rule, else {REACH})",
    )
    parser.add_argument(
        "--margin", type=float, help="lower the target by this much (default: the task's target_rule, else one step)"
    )
    parser.add_argument("--calibration-file", type=Path, help="default: <rules version>/calibration/<task>.jsonl")
    parser.add_argument("--runs-dir", type=Path, default=Path("build/calibration"), help="the runs' MLLOG files")
    parser.add_argument("--propose-only", action="store_true", help="only propose from the calibration file")
    parser.add_argument("--rules-version")
    parser.add_argument(
        "--profile",
        default="submission",
        help="the rules profile whose recipe and data the runs use (default: submission, the only one a "
        "target may come from; smoke tries the tool in seconds, its records say so)",
    )
    parser.add_argument(
        "--rules-dir",
        help="rules folder to read (default: the shipped rules); a copy keeps a "
        "long calibration safe from edits to the working tree",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    add_arguments(parser)
    return execute(parser.parse_args(argv))


def execute(args: argparse.Namespace) -> int:
    """Run the calibration `args` asks for (unless --propose-only), then print the proposed target and RCPs."""
    from levelfield.rules import load_suite

    suite = load_suite(args.rules_version, args.rules_dir)
    task = suite.task(args.task)
    suite.check_id("profile", args.profile)
    args.rules_version = suite.version
    args.suite_frameworks = suite.frameworks
    args.tunable = task.hyperparameters["tunable"]
    from levelfield.reference.interface import Recipe

    # Default: the profile's batch (the recipe's, or a smoke profile's own, as the trainer takes it)
    args.batch_sizes = args.batch_sizes or [Recipe.from_task(task.for_profile(args.profile)).global_batch_size]
    path = args.calibration_file or suite.path / "calibration" / f"{task.id}.jsonl"
    records = read_records(path) if args.propose_only else calibrate(args, path)
    # The file may hold runs of batch sizes the rules no longer allow (kept as the evidence why); records
    # written before `profile` was recorded are submission-profile runs.
    records = [
        r
        for r in records
        if r["global_batch_size"] in args.batch_sizes and r.get("profile", "submission") == args.profile
    ]
    if not records:
        from levelfield.ground.errors import UserError

        raise UserError(
            f"{path}: no {args.profile}-profile calibration runs at global batch size "
            f"{', '.join(map(str, args.batch_sizes))} (expected at least one finished run to propose a target from)",
            hint="run the calibration first (without --propose-only), or name the batch sizes it ran",
        )
    rule = {"step": 0.005, "reach": REACH, "margin": None, **task.quality.get("target_rule", {})}
    rule.update(
        {k: v for k, v in (("step", args.step), ("reach", args.reach), ("margin", args.margin)) if v is not None}
    )
    print(json.dumps(propose(records, **rule), indent=2))
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
