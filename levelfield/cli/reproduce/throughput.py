"""Re-run a training-throughput result (rules 1.2) on the same hardware and judge the submission against it.

    document = reproduce_throughput(tree, result, options)

Each repeat is trained again with its recorded settings (the rules' warm-up
steps, the logged timed steps, the tunable hyperparameters, the compile mode,
the processes) and the recorded seeds (or fresh ones), and each log's figure
is recomputed from its step windows on both sides (levelfield.ground.
step_windows, what the checker held the logged figure to). The verdict is
inference's (reproduce/inference.py, judge_performance): the submission's mean
samples/s may exceed the reproduction's by at most the rules'
`checks.replication_tolerance` (MLPerf Inference's "within 5%"); a submission
slower than its reproduction claims nothing. This is what catches a figure
forged together with forged timestamps, which the log alone cannot show
(docs/audit.md). It runs on the same hardware only (this machine's
fingerprint equals the logged one): on other hardware the figures would
compare two machines, so nothing is run.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from levelfield.cli.reproduce.inference import judge_performance
from levelfield.cli.reproduce.recipe import run_index, training_recipe
from levelfield.cli.reproduce.report import document_head, environment_differences, log_facts, same_hardware
from levelfield.ground import mllog_keys as LK
from levelfield.ground.errors import UserError
from levelfield.ground.parse import plain_int
from levelfield.ground.step_windows import log_figures

if TYPE_CHECKING:
    from levelfield.cli.reproduce.options import ReproduceOptions
    from levelfield.cli.reproduce.recipe import OpenTree, TreeResult
    from levelfield.ground.parse import MllogFile


def _rates(logs: list[MllogFile]) -> list[float | None]:
    figures = [log_figures(log) for log in logs]
    return [None if f is None else f.train_samples_per_s for f in figures]


def reproduce_throughput(tree: OpenTree, result: TreeResult, options: ReproduceOptions) -> dict:
    from levelfield.cli.reproduce.training import fresh_seeds, replay_training
    from levelfield.ground.sysinfo import collect_system_description, fingerprint

    tolerance = tree.suite.checks.get("replication_tolerance")
    if tolerance is None:
        raise UserError(f"result {result.id}: rules {tree.suite.version} set no replication_tolerance to judge by")
    recipe = training_recipe(result, tree.suite)
    if recipe.nodes != 1:
        raise UserError(f"result {result.id}: trained on {recipe.nodes} hosts; a reproduction replays on this host")
    submitted = sorted(result.training.logs, key=run_index)
    recorded = log_facts(submitted[0])
    here = environment_differences(
        recorded, {**recorded, LK.SYSTEM_FINGERPRINT: fingerprint(collect_system_description())}
    )
    if not same_hardware(here):
        raise UserError(
            f"result {result.id}: recorded on other hardware (its system fingerprint differs from this machine's); "
            "a throughput is judged on the same hardware only, so nothing is replayed",
            hint="run the reproduction on the machine the result names (its system description)",
        )
    timed = submitted[0].value(LK.THROUGHPUT_ONLY)
    seeds = recipe.seeds if options.seeds == "recorded" else fresh_seeds(len(recipe.seeds))
    print(f"reproducing {result.task} {result.framework} training throughput ({len(seeds)} repeats) ...", flush=True)
    # Every repeat trained again (`levelfield train --throughput-only` with the recorded settings).
    reproduced = replay_training(
        recipe,
        options.out / "throughput",
        seeds,
        options.data_dir,
        options.rules_dir,
        throughput_only=True,
        throughput_steps=timed if plain_int(timed) else None,
    )
    differences = environment_differences(recorded, log_facts(reproduced[0]))
    judged = judge_performance("training", "train_samples_per_s", _rates(submitted), _rates(reproduced), tolerance)
    reasons = [judged["reason"]] if judged["reason"] else []
    if not same_hardware(differences):  # the replay itself ran elsewhere (another device or process count)
        reasons.append(
            "the reproduction ran on other hardware than the result records: "
            + ", ".join(d["what"] for d in differences)
        )
    how = f"with the {options.seeds} seeds ({len(seeds)} repeats, profile {recipe.profile}, {recipe.mode})"
    return {
        **document_head("throughput", tree, result, how),
        "recipe": asdict(recipe),
        "seeds_used": seeds,
        "environment_differences": differences,
        "performance": judged,
        "reproduced": not reasons,
        "reasons": reasons,
    }
