"""A submission tree read back as the settings that produced each of its results.

    tree = open_tree(Path("sub"))              # UserError when it is not a readable tree
    result = tree.find("trn-1a2b3c4d5e")       # UserError listing the ids when it is not there
    recipe = training_recipe(result, tree.suite)

Result ids are the leaderboard's row ids (tools/leaderboard/rows.py), so an
auditor can go from a row of a published table to its reproduction. Every
value is read from the logs the result holds, and checked for type and
against the rules before anything runs: a tree is untrusted input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.ground import layout as L
from levelfield.ground import mllog_keys as LK
from levelfield.ground.cluster_managers import LAUNCHER_DOMAIN, valid_launcher_record
from levelfield.ground.errors import UserError
from levelfield.ground.parse import MllogFile

if TYPE_CHECKING:
    from levelfield.ground.submission.records import InferenceRun, Submission, TrainingResult
    from levelfield.rules.loader import Suite


@dataclass
class TreeResult:
    """One (system, task, framework) of a tree and one kind: its training runs (time to train), its
    training-throughput repeats (rules 1.2, throughput/), or its inference runs."""

    id: str
    kind: str  # training | throughput | inference
    system: str
    task: str
    framework: str
    training: TrainingResult | None = None  # the logs of a training or a throughput result
    inferences: list[InferenceRun] = field(default_factory=list)


@dataclass
class OpenTree:
    root: Path
    submission: Submission
    suite: Suite  # the rules version the tree declares
    results: dict[str, TreeResult]

    def find(self, result_id: str) -> TreeResult:
        if result_id not in self.results:
            listed = ", ".join(f"{r.id} ({r.kind} {r.task} {r.framework})" for r in self.results.values())
            raise UserError(
                f"{self.root}: no result {result_id!r} (expected one of: {listed or 'none'})",
                hint="ids are the leaderboard's row ids; `levelfield reproduce TREE` lists them",
            )
        return self.results[result_id]


def open_tree(root: Path, rules_dir: str | None = None) -> OpenTree:
    """Read a tree as the checker does (bounded, no link followed) under the rules version it declares."""
    from levelfield.ground.submission.loader import declared_rules_version, load_submission
    from levelfield.ground.submission.tree import read_tree
    from levelfield.rules import load_suite
    from levelfield.tools.leaderboard.rows import row_id

    tree = read_tree(root)
    version = declared_rules_version(tree)
    if version is None:
        raise UserError(f"{root}: no readable code/levelfield.json naming a rules version (expected a packaged tree)")
    suite = load_suite(version, rules_dir)
    sub = load_submission(tree, suite)
    results: dict[str, TreeResult] = {}

    def add(kind: str, system: str, task: str, framework: str) -> TreeResult:
        identity = {"rules_version": suite.version, "division": sub.division, "org": sub.org}
        identity |= {"system": system, "task": task, "framework": framework}
        rid = row_id({"training": "trn", "throughput": "tpt"}.get(kind, "inf"), identity)
        return results.setdefault(rid, TreeResult(rid, kind, system, task, framework))

    for training in sub.trainings:
        add("training", training.system, training.task, training.framework).training = training
    for throughput in sub.throughputs:
        add("throughput", throughput.system, throughput.task, throughput.framework).training = throughput
    for run in sub.inferences:
        add("inference", run.system, run.task, run.framework).inferences.append(run)
    return OpenTree(root, sub, suite, dict(sorted(results.items(), key=lambda kv: (kv[1].kind, kv[1].task, kv[0]))))


@dataclass
class TrainingRecipe:
    """What `levelfield train` needs to run a result again."""

    task: str
    framework: str
    rules_version: str
    profile: str
    mode: str
    division: str
    seeds: list[int]
    overrides: dict  # the tunable hyperparameters, by rules name
    world_size: int  # processes over every node
    nodes: int = 1  # hosts; logs written before levelfield_nodes existed ran on one
    # who started the processes (levelfield_launcher: a workload manager, torchrun or levelfield, and the
    # manager's job and step ids); None for logs written before the key existed
    launcher: dict | None = None


def _logged(log: MllogFile, key: str, kind: type | tuple, what: str):
    """The log's value of `key`, of type `kind` (never a bool where a number is expected)."""
    value = log.value(key)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise UserError(f"{log.path}: {key} is {value!r}, expected {what}; the run cannot be replayed from it")
    return value


def run_index(log: MllogFile) -> int:
    """i of the log's result_<i>.txt: runs in the order they were numbered (result_10 after result_9)."""
    match = L.TRAINING_LOG.match(log.path.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else 0


def training_recipe(result: TreeResult, suite: Suite) -> TrainingRecipe:
    """The settings of a training or throughput result, from its logs (the first run's settings; every run's
    seed)."""
    logs = sorted(result.training.logs, key=run_index) if result.training else []
    if not logs:
        raise UserError(f"result {result.id}: no training logs to replay")
    first = logs[0]
    task = suite.task(result.task)
    overrides = {}
    for name, spec in task.hyperparameters["tunable"].items():
        key = suite.hyperparameter_log_keys[name]
        if isinstance(spec["default"], str):  # a named choice (rules 1.1 precision)
            overrides[name] = _logged(first, key, str, f"one of {', '.join(spec['choices'])} (tunable {name})")
        else:
            overrides[name] = _logged(first, key, (int, float), f"a number (tunable {name})")
    profile = _logged(first, LK.PROFILE, str, "a profile name")
    suite.check_id("profile", profile)
    mode = _logged(first, LK.COMPILE_MODE, str, "compiled or eager")
    if mode not in ("compiled", "eager"):
        raise UserError(f"{first.path}: {LK.COMPILE_MODE} is {mode!r}, expected compiled or eager")
    seeds = [_logged(log, "seed", int, "an integer seed") for log in logs]
    return TrainingRecipe(
        task=result.task,
        framework=result.framework,
        rules_version=suite.version,
        profile=profile,
        mode=mode,
        division=_logged(first, "submission_division", str, "a division"),
        seeds=seeds,
        overrides=overrides,
        world_size=_logged(first, LK.WORLD_SIZE, int, "a process count"),
        nodes=_logged(first, LK.NODES, int, "a node count") if first.first(LK.NODES) is not None else 1,
        launcher=_launcher(first),
    )


def _launcher(log: MllogFile) -> dict | None:
    """The log's levelfield_launcher, checked as the checker checks it (TRN017); None when not logged."""
    if log.first(LK.LAUNCHER) is None:
        return None
    value = log.value(LK.LAUNCHER)
    if not valid_launcher_record(value):
        raise UserError(
            f"{log.path}: {LK.LAUNCHER} is {value!r}, expected {LAUNCHER_DOMAIN}; the run cannot be replayed from it"
        )
    return value
