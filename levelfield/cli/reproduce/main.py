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
from levelfield.cli.reproduce.recipe import (
    OpenTree,
    TrainingRecipe,
    TreeResult,
    open_tree,
    run_index,
    training_recipe,
)
from levelfield.cli.reproduce.report import (
    document_head,
    environment_differences,
    log_facts,
    same_hardware,
    write_report,
)
from levelfield.ground import layout as L
from levelfield.ground.cluster_managers import MANAGED, MANAGER_NAMES, SLURM
from levelfield.ground.errors import UserError


def reproduce(options: ReproduceOptions) -> dict:
    _refuse_overlap(options.out, options.tree)
    tree = open_tree(options.tree, options.rules_dir)
    result = tree.find(options.result)
    if result.framework in tree.suite.frameworks and tree.submission.division != "closed":
        raise UserError(
            f"{options.tree}: division {tree.submission.division!r}: its results ran the submitter's own code, "
            "which levelfield never executes from a tree; only closed-division results and plugins' results "
            "are replayed"
        )
    if result.framework not in tree.suite.frameworks:
        require_plugin(tree, result)
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


def require_plugin(tree: OpenTree, result: TreeResult) -> None:
    """UserError unless the plugin a result of a plugin's framework ran (code/plugins.json) is installed here
    with the digest the tree records, in a division the rules admit plugins in. A plugin's result is replayed
    by the installed distribution, never by the copy in the tree, which levelfield never executes."""
    from levelfield.ground.plugins import distribution_code

    sub, suite = tree.submission, tree.suite
    if sub.division not in suite.plugin_divisions:
        raise UserError(
            f"result {result.id}: framework {result.framework!r} is a plugin's, which the {sub.division} division "
            f"of rules {suite.version} does not admit (PLG001); nothing to replay"
        )
    name = sub.plugin_frameworks[result.framework]
    entries = sub.plugins.data.get("plugins") if sub.plugins and isinstance(sub.plugins.data, dict) else None
    entry = next((e for e in entries or [] if isinstance(e, dict) and e.get("distribution") == name), {})
    ran = f"plugin {name} {entry.get('version')} (sha256 {entry.get('sha256')})"
    code = distribution_code(name) if isinstance(name, str) else None
    if code is None or code.sha256 != entry.get("sha256"):
        here = f"{code.distribution} {code.version} (sha256 {code.sha256})" if code else "not installed"
        raise UserError(
            f"result {result.id} ran {ran}; installed here: {here}; refused: a plugin's result is replayed only "
            f"with the distribution the tree records",
            hint=f"install that build of {name} (its files: {sub.path(L.CODE, L.PLUGINS, str(name))}/ in the tree)",
        )


def _manager(recipe: TrainingRecipe) -> str | None:
    """e.g. "Slurm (job 41, step 0)" when a workload manager started the result's ranks, else None."""
    launcher = recipe.launcher or {}
    if launcher.get("name") not in MANAGED:
        return None
    step = f", step {launcher['step_id']}" if launcher.get("step_id") is not None else ""
    return f"{MANAGER_NAMES[launcher['name']]} (job {launcher['job_id']}{step})"


def _several_hosts(result: TreeResult, recipe: TrainingRecipe) -> UserError:
    """Why a result trained on several hosts is not replayed here, with the command that replays it."""
    per_node = recipe.world_size // recipe.nodes
    manager = _manager(recipe)
    started = f", its ranks started by {manager}" if manager else ""
    if manager and recipe.launcher["name"] == SLURM:
        replay = f"srun --nodes {recipe.nodes} --ntasks-per-node {per_node} levelfield train ... on a Slurm cluster"
    elif manager:
        replay = f"mpirun -n {recipe.world_size} --map-by ppr:{per_node}:node levelfield train ... over the hosts"
    else:
        replay = (
            f"levelfield train --nproc {per_node} --nnodes {recipe.nodes} --node-rank R "
            "--rdzv-endpoint HOST:PORT on each host"
        )
    return UserError(
        f"result {result.id}: trained on {recipe.nodes} hosts{started}; a reproduction replays on this host only",
        hint=f"replay it by hand: {replay} (docs/distributed.md)",
    )


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
        raise _several_hosts(result, recipe)
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
    if recipe.world_size > 1:
        how += f" on {recipe.world_size} processes of this host (levelfield train --nproc {recipe.world_size})"
    if _manager(recipe):
        how += f"; the submission's ranks were started by {_manager(recipe)}"
    return {
        **document_head("training", tree, result, how),
        "recipe": asdict(recipe),
        "seeds_used": seeds,
        "environment_differences": differences,
        **judged,
    }
