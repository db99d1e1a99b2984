"""Re-run a training result and judge the submission against the reproduction.

    logs = replay_training(recipe, out / "training", seeds, data_dir=None, rules_dir=None)
    judged = judge_training(submitted_logs, logs, task, alpha, tolerance, same_hardware=True, paired=True)

Convergence is judged twice:

- the reference-convergence test of rules 1.1 (levelfield/ground/rcp.py) with
  the reproduction as the reference: the submission's olympic mean of epochs
  to target must not lie below the reproduction's minimum acceptable mean,
  the one-sided t-test at the rules' `convergence_alpha`. This is the test
  for fresh seeds, where only the distribution can be compared;
- with the recorded seeds, run by run as well: the same seed must not reach
  the target later in the reproduction than the submission says. A seed's
  curve is the same in a deterministic implementation; a nondeterministic
  one (reductions in another order) moves an eval by ~1e-4, which can move
  the crossing of the target by one evaluation when an eval sits that close
  to it. So one run faster by one evaluation interval is tolerated per
  result, and nothing more: two such runs, or one faster by more, and the
  logged epochs are not what those seeds give.

Time to train is compared only on the same hardware (the logged system
fingerprints agree), and a submission is called faster than its reproduction
only when it is both: significantly (a one-sided Welch test at `alpha`) and
by more than the rules' `checks.replication_tolerance` (its mean time below
(1 - tolerance) x the reproduction's). Significance alone would call an
honest submission of near-constant run times "faster" in about alpha of all
audits, and a difference of 1% is no claim; MLPerf likewise pairs its
replication check with a 5% tolerance. On other hardware the times are
shown, and the verdict rests on convergence.
"""

from __future__ import annotations

import itertools
import secrets
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING

from levelfield.cli.reproduce.recipe import TrainingRecipe, run_index
from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import MllogFile, parse_mllog
from levelfield.ground.rcp import min_acceptable_mean, reference_point
from levelfield.ground.stats import olympic_mean, welch_test
from levelfield.ground.training_log import epochs_to_target, run_status, time_to_target_s

if TYPE_CHECKING:
    from levelfield.rules.loader import Task

# Runs per result that may reach the target one evaluation earlier than their seed's reproduction (the
# module docstring says why one): a property of replaying a nondeterministic run, not a benchmark rule.
TOLERATED_EARLIER_RUNS = 1
EPOCH_TOLERANCE = 1e-9  # epoch numbers are logged floats; equal ones compare equal within this


def fresh_seeds(count: int) -> list[int]:
    """`count` distinct random seeds in the range the trainer logs."""
    seeds: set[int] = set()
    while len(seeds) < count:
        seeds.add(secrets.randbelow(LK.SEED_LIMIT))
    return sorted(seeds)


def replay_training(
    recipe: TrainingRecipe,
    out: Path,
    seeds: list[int],
    data_dir: str | None,
    rules_dir: str | None,
    *,
    throughput_only: bool = False,
    throughput_steps: int | None = None,
) -> list[MllogFile]:
    """Train every seed with the recipe (the reference implementation, as `levelfield train` would, on as
    many processes of this host as the result used) and read back the logs it wrote, in run order.
    `throughput_only`/`throughput_steps`: `train --throughput-only` (throughput.py's replay; None: the rules'
    timed steps)."""
    from levelfield.harness.options import TrainOptions
    from levelfield.harness.trainer import train

    options = TrainOptions(
        task_id=recipe.task,
        framework=recipe.framework,
        out=out,
        profile=recipe.profile,
        seeds=seeds,
        mode=recipe.mode,
        division=recipe.division,
        data_dir=data_dir,
        rules_dir=rules_dir,
        rules_version=recipe.rules_version,
        overrides=recipe.overrides,
        throughput_only=throughput_only,
        throughput_steps=throughput_steps,
    )
    if recipe.world_size == 1:
        interrupted_by = train(options)["interrupted_by"]
    else:
        from levelfield.cli.launch import launch
        from levelfield.harness.world import Layout

        interrupted_by = launch(options, Layout(nproc=recipe.world_size))
    if interrupted_by:
        raise KeyboardInterrupt
    logs = [parse_mllog(path.read_bytes(), str(path)) for path in out.glob("result_*.txt")]
    return sorted(logs, key=run_index)


def _runs(logs: list[MllogFile]) -> list[dict]:
    return [
        {
            "seed": log.value("seed"),
            "status": run_status(log),
            "epochs_to_target": epochs_to_target(log) if run_status(log) == "success" else None,
            "time_to_target_s": time_to_target_s(log),
        }
        for log in logs
    ]


def judge_training(
    submitted: list[MllogFile],
    reproduced: list[MllogFile],
    task: Task,
    alpha: float,
    tolerance: float,
    same_hardware: bool,
    paired: bool,
) -> dict:
    """{"reproduced": bool, "reasons": [...], "submitted": runs, "reproduction": runs, "epochs": {...},
    "time": {...}}; a reason is a sentence naming the figures that failed."""
    drop = task.training["olympic_drop"]
    sub_runs, rep_runs = _runs(submitted), _runs(reproduced)
    reasons = []
    missed = sum(r["status"] != "success" for r in rep_runs)
    if missed > task.training["max_failed_runs"]:
        reasons.append(
            f"the reproduction missed the target in {missed} of {len(rep_runs)} runs "
            f"(the rules allow {task.training['max_failed_runs']})"
        )
    epochs = _epochs_test(sub_runs, rep_runs, drop, alpha)
    if epochs["faster_than_reproduction"]:
        reasons.append(
            f"the submission converges in {epochs['submitted_olympic_mean']:.4g} epochs (olympic mean), "
            f"below the {epochs['min_acceptable_mean']:.4g} the reproduction allows "
            f"(reproduction: {epochs['reproduced_olympic_mean']:.4g}; one-sided t-test, alpha {alpha})"
        )
    seeds = _paired_test(sub_runs, rep_runs, eval_interval_epochs(reproduced)) if paired else None
    if seeds is not None and seeds["reason"]:
        reasons.append(seeds["reason"])
    time = _time_test(sub_runs, rep_runs, alpha, tolerance, same_hardware)
    if time.get("faster_than_reproduction"):
        reasons.append(
            f"on the same hardware the submission's mean time to target is {1 - time['mean_ratio']:.1%} below "
            f"the reproduction's: beyond its noise (one-sided Welch p = {time['p_value']:.3g} < {alpha}) and "
            f"beyond the rules' replication tolerance ({tolerance:.0%})"
        )
    return {
        "reproduced": not reasons,
        "reasons": reasons,
        "submitted": sub_runs,
        "reproduction": rep_runs,
        "epochs": epochs,
        "seeds": seeds,
        "time": time,
    }


def eval_interval_epochs(logs: list[MllogFile]) -> float:
    """The longest gap between two evaluations (and before the first) in the reproduction's logs, in epochs;
    1.0 when the logs show no evaluation."""
    gaps = []
    for log in logs:
        epochs = [line.metadata.get("epoch_num") for line in log.all("eval_accuracy")]
        epochs = [0.0] + [e for e in epochs if isinstance(e, (int, float))]
        gaps += [later - earlier for earlier, later in itertools.pairwise(epochs)]
    return max(gaps, default=1.0)


def _paired_test(sub_runs: list[dict], rep_runs: list[dict], interval: float) -> dict:
    """Each submitted run against the reproduction of its own seed (same order, same seeds)."""
    earlier = []
    for sub, rep in zip(sub_runs, rep_runs, strict=True):
        claimed, got = sub["epochs_to_target"], rep["epochs_to_target"]
        if claimed is None:
            continue  # a run the submission counts as failed claims nothing
        if got is None or claimed < got - EPOCH_TOLERANCE:
            earlier.append({"seed": sub["seed"], "submitted": claimed, "reproduced": got})
    beyond = [
        e for e in earlier if e["reproduced"] is None or e["reproduced"] - e["submitted"] > interval + EPOCH_TOLERANCE
    ]
    reason = None
    if beyond or len(earlier) > TOLERATED_EARLIER_RUNS:
        shown = ", ".join(
            f"seed {e['seed']}: {e['submitted']:.4g} logged, "
            + ("target not reached" if e["reproduced"] is None else f"{e['reproduced']:.4g} reproduced")
            for e in earlier
        )
        reason = (
            f"with the recorded seeds, {len(earlier)} run(s) reach the target earlier in the submission than in "
            f"the reproduction ({shown}); at most {TOLERATED_EARLIER_RUNS} may, by at most one evaluation "
            f"({interval:.4g} epochs)"
        )
    return {"earlier_runs": earlier, "eval_interval_epochs": interval, "reason": reason}


def _epochs_test(sub_runs: list[dict], rep_runs: list[dict], drop: int, alpha: float) -> dict:
    sub = [r["epochs_to_target"] for r in sub_runs if r["epochs_to_target"] is not None]
    rep = [r["epochs_to_target"] for r in rep_runs if r["epochs_to_target"] is not None]
    if len(sub) <= 2 * drop or len(rep) <= 2 * drop or len(sub) + len(rep) - 4 * drop < 3:
        return {"faster_than_reproduction": False, "note": "too few successful runs on a side for the test"}
    point = reference_point(0, rep, drop)
    floor = min_acceptable_mean(point, len(sub) - 2 * drop, alpha)
    submitted = olympic_mean(sub, drop)
    return {
        "submitted_olympic_mean": submitted,
        "reproduced_olympic_mean": point.mean_epochs,
        "reproduced_stdev": point.stdev_epochs,
        "min_acceptable_mean": floor,
        "faster_than_reproduction": submitted < floor,
    }


def _time_test(sub_runs: list[dict], rep_runs: list[dict], alpha: float, tolerance: float, same_hardware: bool) -> dict:
    sub = [r["time_to_target_s"] for r in sub_runs if r["time_to_target_s"] is not None]
    rep = [r["time_to_target_s"] for r in rep_runs if r["time_to_target_s"] is not None]
    figures = {"submitted_s": sub, "reproduced_s": rep, "same_hardware": same_hardware}
    if not same_hardware:
        return {**figures, "note": "not compared: the hardware differs (see the environment differences)"}
    test = welch_test(sub, rep, alpha, alternative="less")
    if test["p_value"] is None:
        return {**figures, "note": "not compared: too few successful runs, or no spread on either side"}
    ratio = mean(sub) / mean(rep)
    return {
        **figures,
        "p_value": test["p_value"],
        "mean_ratio": ratio,
        "tolerance": tolerance,
        "faster_than_reproduction": not test["within_noise"] and ratio < 1 - tolerance,
    }
