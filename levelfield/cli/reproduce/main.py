"""Reproduce one result of a submission tree: the whole flow behind `levelfield reproduce`.

    from levelfield.cli.reproduce.options import ReproduceOptions
    doc = reproduce(ReproduceOptions(tree=Path("sub"), result="trn-1a2b3c4d5e", out=Path("repro")))
    doc["reproduced"]            # True / False; a UserError when it could not run

Writes `out/reproduction.json` (the document) beside the reproduction's own
files (`out/training/result_<i>.txt`, `out/throughput/result_<i>.txt` for a
training-throughput result, or the LoadGen runs under `out/inference/`).
"""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path

from levelfield.cli.reproduce.options import ReproduceOptions
from levelfield.cli.reproduce.recipe import OpenTree, TreeResult, open_tree, run_index, training_recipe
from levelfield.cli.reproduce.report import (
    document_head,
    environment_differences,
    log_facts,
    same_hardware,
    write_report,
)
from levelfield.ground.errors import UserError


def reproduce(options: ReproduceOptions) -> dict:
    _refuse_overlap(options.out, options.tree)
    tree = open_tree(options.tree, options.rules_dir)
    result = tree.find(options.result)
    if tree.submission.division != "closed":
        raise UserError(
            f"{options.tree}: division {tree.submission.division!r}: its results ran the submitter's own code, "
            "which levelfield never executes from a tree; only closed-division results are replayed"
        )
    _prepare(options.out, options.force)
    if result.kind == "training":
        document = _training(tree, result, options)
    elif result.kind == "throughput":
        from levelfield.cli.reproduce.throughput import reproduce_throughput

        document = reproduce_throughput(tree, result, options)
    else:
        from levelfield.cli.reproduce.inference import reproduce_inference

        document = reproduce_inference(tree, result, options)
    write_report(options.out, document)
    return document


def _refuse_overlap(out: Path, tree: Path) -> None:
    """--out inside the tree would change what was submitted; the tree inside --out would be replaced by --force."""
    a, b = out.resolve(), tree.resolve()
    if a.is_relative_to(b) or b.is_relative_to(a):
        raise UserError(
            f"--out {out}: overlaps the submission tree {tree}; the reproduction never writes into or over a tree",
            hint="choose an --out outside the tree",
        )


def _prepare(out: Path, force: bool) -> None:
    if out.exists() and any(out.iterdir()):
        if not force:
            raise UserError(
                f"{out}: exists and is not empty; not overwriting it", hint="choose another --out, or --force"
            )
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def _training(tree: OpenTree, result: TreeResult, options: ReproduceOptions) -> dict:
    from levelfield.cli.reproduce.training import fresh_seeds, judge_training, replay_training

    recipe = training_recipe(result, tree.suite)
    if recipe.nodes != 1:
        raise UserError(
            f"result {result.id}: trained on {recipe.nodes} hosts; a reproduction replays on this host only",
            hint=f"replay it by hand: levelfield train --nproc {recipe.world_size // recipe.nodes} --nnodes "
            f"{recipe.nodes} --node-rank R --rdzv-endpoint HOST:PORT on each host (docs/distributed.md)",
        )
    seeds = recipe.seeds if options.seeds == "recorded" else fresh_seeds(len(recipe.seeds))
    reproduced = replay_training(recipe, options.out / "training", seeds, options.data_dir, options.rules_dir)
    submitted = sorted(result.training.logs, key=run_index)
    differences = environment_differences(log_facts(submitted[0]), log_facts(reproduced[0]))
    task = tree.suite.task(result.task).for_profile(recipe.profile)
    judged = judge_training(
        submitted,
        reproduced,
        task,
        alpha=float(tree.suite.checks["convergence_alpha"]),
        tolerance=float(tree.suite.checks["replication_tolerance"]),
        same_hardware=same_hardware(differences),
        paired=options.seeds == "recorded",
    )
    how = f"with the {options.seeds} seeds ({len(seeds)} runs, profile {recipe.profile}, {recipe.mode})"
    return {
        **document_head("training", tree, result, how),
        "recipe": asdict(recipe),
        "seeds_used": seeds,
        "environment_differences": differences,
        **judged,
    }
