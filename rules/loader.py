"""Load one rules version: read, validate against the schemas, cross-check, return typed records.

    from levelfield.rules import load_suite
    suite = load_suite()                       # newest final version (a provisional one only when named)
    suite = load_suite("1.0", rules_dir="my-rules")
    suite.task("ctr-dlrm").training["runs"]

The schema catches shapes and types; `_cross_check` catches what a schema
cannot see (a default outside its bounds, more dropped runs than runs, a task
file that does not match its name). Every problem is one line naming the file,
the `$.path`, the value found and the value expected.
"""

from __future__ import annotations

import copy
import functools
import os
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import read_text_limited
from levelfield.ground.validation import SchemaError, parse_yaml, show, validate

SUITE_FILE = "suite.yaml"
TASKS_DIR = "tasks"


@dataclass(frozen=True)
class Task:
    """One task file. Sections are plain dicts exactly as in the YAML; treat them as read-only."""

    id: str
    path: Path
    title: str
    dataset: dict
    model: dict
    quality: dict
    hyperparameters: dict
    training: dict
    inference: dict
    scenarios: dict
    profiles: dict
    reference_convergence: dict | None = None  # absent until the task is calibrated
    # Rules 1.1 (docs/scale.md): the task family and size class; a 1.0 task file has neither, and its
    # tasks are all tiny, so an absent size class means tiny and an absent family is unstated (None).
    family: str | None = None
    size_class: str = "tiny"
    # Rules 1.2: training throughput as a result kind of its own (step counts, repeats, batch sizes); None in
    # a version without throughput results (1.0, 1.1), where a throughput-only run is never a result.
    throughput: dict | None = None

    def for_profile(self, profile: str) -> Task:
        """The task as a run with `profile` sees it: the profile's training, quality target and
        inference reference value replace the task's (only the demo profile, which trains on a
        subset, overrides the latter two; the loader refuses them on a submittable profile)."""
        spec = self.profiles[profile]
        return replace(
            self,
            training=self.training_settings(profile),
            quality={**self.quality, **spec.get("quality", {})},
            inference={**self.inference, **spec.get("inference", {})},
        )

    @property
    def train_samples(self) -> int:
        """Training rows a run uses: a profile's first n (smoke, demo), or the whole split."""
        return int(self.training.get("train_samples", self.dataset["train_samples"]))

    @property
    def eval_samples(self) -> int:
        """Eval rows a run scores (the trainer and the LoadGen runner alike)."""
        return int(self.training.get("eval_samples", self.dataset["eval_samples"]))

    @property
    def inference_samples(self) -> int:
        """Eval rows an inference run answers (LoadGen's sample library, the accuracy run's score): the
        first eval_samples, and where the rules define a fidelity gate (1.2's standard tasks) no more than
        its `samples`, the rows the reference outputs cover."""
        fidelity = self.inference.get("fidelity")
        return self.eval_samples if fidelity is None else min(self.eval_samples, int(fidelity["samples"]))

    def training_settings(self, profile: str) -> dict:
        """The task's training section with the profile's overrides applied."""
        return {**self.training, **self.profiles[profile]["training"]}

    def throughput_settings(self, profile: str) -> dict | None:
        """A throughput result's rules under `profile`: the task's throughput section with the profile's step
        counts and repeats over it; None where the rules have no throughput results."""
        if self.throughput is None:
            return None
        return {**self.throughput, **self.profiles[profile].get("throughput", {})}

    @property
    def precisions(self) -> list[str]:
        """The precisions the closed-division recipe allows: the fixed one, or the tunable one's choices."""
        hp = self.hyperparameters
        return [hp["fixed"]["precision"]] if "precision" in hp["fixed"] else list(hp["tunable"]["precision"]["choices"])

    def loadgen_settings(self, profile: str, scenario: str) -> dict:
        """The scenario's constraints merged with the profile's run lengths for it."""
        return {**self.scenarios[scenario], **self.profiles[profile][scenario]}


@dataclass(frozen=True)
class Suite:
    version: str
    path: Path
    status: str
    tools: dict
    frameworks: list[str]
    divisions: list[str]
    scenarios: list[str]
    modes: list[str]
    loadgen_seeds: dict
    profiles: dict
    hyperparameter_log_keys: dict
    checks: dict
    tasks: dict[str, Task] = field(repr=False)
    # Rules 1.2: the frameworks of inference results, the training frameworks and those that serve inference
    # only (onnxruntime); absent (1.0, 1.1): the training frameworks. `frameworks` stays the training ones.
    inference_frameworks: list[str] = field(default_factory=list)
    loadgen_query_stream: dict = field(default_factory=dict)  # absent from a rules version: not checked
    loadgen_accuracy_log: dict = field(default_factory=dict)  # absent from a rules version: not checked
    # The divisions whose results may come from a plugin's framework (docs/plugins.md); absent (1.0, 1.1): none.
    plugin_divisions: list[str] = field(default_factory=list)
    # What every run measures besides its score (rules 1.2: the meter's sample interval); absent: the
    # harness's own default (levelfield/harness/run_meter.py), recorded in every run all the same
    measurement: dict = field(default_factory=dict)

    @property
    def convergence_test(self) -> str:
        """How TRN009 judges convergence: "welch" (rules 1.0) or "rcp" (reference convergence points)."""
        return convergence_test(self.checks)

    @property
    def all_frameworks(self) -> list[str]:
        """Every framework of this version, training frameworks first: the result folders a tree may hold."""
        return list(dict.fromkeys([*self.frameworks, *self.inference_frameworks]))

    def task(self, task_id: str) -> Task:
        if task_id not in self.tasks:
            raise UserError(
                f"unknown task {task_id!r} in rules {self.version} (expected one of: {', '.join(self.tasks)})"
            )
        return self.tasks[task_id]

    def check_id(self, kind: str, value: str) -> str:
        """Validate a framework (of training) / inference framework / scenario / division / mode id given by
        the user; a framework that serves inference only is refused for training with that reason."""
        if kind == "framework" and value in self.inference_frameworks and value not in self.frameworks:
            raise UserError(
                f"framework {value!r} serves inference only in rules {self.version} "
                f"(training frameworks: {', '.join(self.frameworks)})"
            )
        allowed = {
            "framework": self.frameworks,
            "inference_framework": self.inference_frameworks,
            "scenario": self.scenarios,
            "division": self.divisions,
            "mode": self.modes,
            "profile": list(self.profiles),
        }[kind]
        if value not in allowed:
            what = "framework for inference" if kind == "inference_framework" else kind
            raise UserError(f"unknown {what} {value!r} in rules {self.version} (expected one of: {', '.join(allowed)})")
        return value


def display_path(path: Path) -> str:
    """A path relative to the working directory when it lies below it, else absolute."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def rules_root(rules_dir: str | os.PathLike | None = None) -> Path:
    """The folder holding rules versions: the one given, else the rules shipped as package data."""
    if rules_dir is not None:
        root = Path(rules_dir)
        if not root.is_dir():
            raise UserError(f"{rules_dir}: rules folder not found (expected a folder holding e.g. 1.0/{SUITE_FILE})")
        return root
    return Path(str(resources.files("levelfield.rules")))


def available_versions(root: Path) -> list[str]:
    """Versions present under `root`, oldest first (numeric order, so 1.10 follows 1.9)."""
    found = [p.name for p in root.iterdir() if (p / SUITE_FILE).is_file()]
    return sorted(found, key=lambda v: tuple(int(x) if x.isdigit() else -1 for x in v.split(".")))


def default_version(root: Path, versions: list[str]) -> str:
    """The version tools use when none is named: the newest whose suite.yaml says `status: final`.

    A provisional version (targets still being calibrated) loads only when asked for by name, so a
    newcomer's demo and a vendor's submission never land on rules that may still move; with no
    final version at all, the newest one. A suite file that fails validation on the way is an
    error, never skipped: skipping it would silently fall back to an older version."""
    for version in reversed(versions):
        if _load_validated(root / version / SUITE_FILE, "suite")["status"] == "final":
            return version
    return versions[-1]


def load_suite(version: str | None = None, rules_dir: str | os.PathLike | None = None) -> Suite:
    root = rules_root(rules_dir)
    versions = available_versions(root)
    if not versions:
        raise UserError(f"{display_path(root)}: no rules version found (expected <version>/{SUITE_FILE})")
    version = version or default_version(root, versions)
    if version not in versions:
        raise UserError(
            f"rules version {version!r} not found in {display_path(root)} (available: {', '.join(versions)})"
        )
    folder = root / version
    suite_path = folder / SUITE_FILE
    raw = _load_validated(suite_path, "suite")
    if missing := [f for f in raw["frameworks"] if f not in raw.get("inference_frameworks", raw["frameworks"])]:
        raise SchemaError(
            display_path(suite_path),
            [f"$.inference_frameworks: lacks {', '.join(missing)} (expected every framework of $.frameworks too)"],
        )
    if raw["rules_version"] != version:
        raise SchemaError(
            display_path(suite_path),
            [f"$.rules_version: expected {version!r} (the folder name), got {show(raw['rules_version'])}"],
        )
    stray = [d for d in raw.get("plugin_divisions", []) if d not in raw["divisions"]]
    if stray:
        raise SchemaError(
            display_path(suite_path),
            [f"$.plugin_divisions: {stray[0]!r} found, expected one of $.divisions ({', '.join(raw['divisions'])})"],
        )
    tasks, problems = {}, []
    for task_id in raw["tasks"]:  # report every broken task file at once, not one per attempt
        try:
            tasks[task_id] = _load_task(folder, task_id, raw)
        except UserError as error:
            problems.append(str(error))
    if problems:
        raise UserError("\n".join(problems))
    _check_no_stray_task_files(folder, raw["tasks"])
    return Suite(
        version=version,
        path=folder,
        status=raw["status"],
        tools=raw["tools"],
        frameworks=raw["frameworks"],
        inference_frameworks=raw.get("inference_frameworks", raw["frameworks"]),
        divisions=raw["divisions"],
        scenarios=raw["scenarios"],
        modes=raw["modes"],
        loadgen_seeds=raw["loadgen_seeds"],
        loadgen_query_stream=raw.get("loadgen_query_stream", {}),
        loadgen_accuracy_log=raw.get("loadgen_accuracy_log", {}),
        measurement=raw.get("measurement", {}),
        profiles=raw["profiles"],
        hyperparameter_log_keys=raw["hyperparameter_log_keys"],
        checks=raw["checks"],
        tasks=tasks,
        plugin_divisions=raw.get("plugin_divisions", []),
    )


def newest_task(task_id: str, rules_dir: str | os.PathLike | None = None) -> Task:
    """`task_id` as the newest rules version that has it defines it: for a task that enters in a version
    newer than the default one (the standard size class enters in 1.1), so its model spec can be built
    whatever version a run later names."""
    root = rules_root(rules_dir)
    for version in reversed(available_versions(root)):
        suite = load_suite(version, rules_dir)
        if task_id in suite.tasks:
            return suite.task(task_id)
    raise UserError(f"{display_path(root)}: no rules version has task {task_id!r}")


def _load_validated(path: Path, schema: str) -> Any:
    shown = display_path(path)
    if not path.is_file():
        raise UserError(f"{shown}: rules file not found")
    # A private copy each time: callers may hold on to (and must not share) what they were given.
    return copy.deepcopy(_parse_validated(read_text_limited(path), schema, shown))


@functools.lru_cache(maxsize=64)
def _parse_validated(text: str, schema: str, shown: str) -> Any:
    """Parsed and validated once per file content: the pure-Python YAML parser took ~85% of a
    load_suite (~0.15 s), which the checker, runner and leaderboard pay on every call. Keyed by
    the text itself, so an edited file is parsed again; a file that fails raises every time."""
    data = parse_yaml(text, shown)
    validate(data, schema, shown)
    return data


def _load_task(folder: Path, task_id: str, suite_raw: dict) -> Task:
    path = folder / TASKS_DIR / f"{task_id}.yaml"
    raw = _load_validated(path, "task")
    problems = _cross_check(raw, task_id, suite_raw)
    if problems:
        raise SchemaError(display_path(path), problems)
    return Task(path=path, **raw)


def _check_no_stray_task_files(folder: Path, task_ids: list[str]) -> None:
    """A task file the suite does not list is a typo or a leftover; refuse rather than ignore it."""
    for path in sorted((folder / TASKS_DIR).glob("*.yaml")):
        if path.stem not in task_ids:
            raise UserError(
                f"{display_path(path)}: task file not listed in {SUITE_FILE} (listed: {', '.join(task_ids)})"
            )


def _cross_check(raw: dict, task_id: str, suite_raw: dict) -> list[str]:
    """Rules a JSON Schema cannot express; one `$.path: ...` line per problem."""
    problems = []
    if raw["id"] != task_id:
        problems.append(f"$.id: expected {task_id!r} (the file name), got {show(raw['id'])}")
    for name, spec in raw["hyperparameters"]["tunable"].items():
        where = f"$.hyperparameters.tunable.{name}"
        low, high = spec.get("min"), spec.get("max")
        if low is not None and high is not None and low > high:
            problems.append(f"{where}: min {low} is above max {high}")
        if "choices" in spec and spec["default"] not in spec["choices"]:
            problems.append(f"{where}.default: expected one of {spec['choices']}, got {show(spec['default'])}")
        named = name == "precision" or isinstance(spec["default"], str)
        if named or any(isinstance(c, str) for c in spec.get("choices", [])):
            # A named choice (precision): nothing between two names, so choices only, all names.
            if "choices" not in spec or low is not None or high is not None:
                problems.append(f"{where}: a named tunable takes choices only, got {sorted(spec)}")
            elif not all(isinstance(c, str) for c in [*spec["choices"], spec["default"]]):
                problems.append(f"{where}: expected names only in default and choices, got {spec}")
            continue
        if (low is not None and spec["default"] < low) or (high is not None and spec["default"] > high):
            problems.append(f"{where}.default: expected a value within [{low}, {high}], got {show(spec['default'])}")
    overlap = set(raw["hyperparameters"]["fixed"]) & set(raw["hyperparameters"]["tunable"])
    for name in sorted(overlap):
        problems.append(f"$.hyperparameters: {name!r} is both fixed and tunable")
    if "precision" not in {*raw["hyperparameters"]["fixed"], *raw["hyperparameters"]["tunable"]}:
        problems.append("$.hyperparameters: 'precision' is neither fixed nor tunable (expected one of them)")
    training = raw["training"]
    if 2 * training["olympic_drop"] >= training["runs"]:
        problems.append(
            f"$.training.olympic_drop: dropping {training['olympic_drop']} from each end of "
            f"{training['runs']} runs leaves none (expected 2 x olympic_drop < runs)"
        )
    if training["max_failed_runs"] > training["olympic_drop"]:
        problems.append(
            f"$.training.max_failed_runs: expected <= olympic_drop ({training['olympic_drop']}), "
            f"since a failed run must be a dropped one; got {training['max_failed_runs']}"
        )
    hyperparameters = [*raw["hyperparameters"]["fixed"], *raw["hyperparameters"]["tunable"]]
    for name in hyperparameters:
        if name not in suite_raw["hyperparameter_log_keys"]:
            problems.append(f"$.hyperparameters: {name!r} has no MLLOG key in {SUITE_FILE} hyperparameter_log_keys")
    inference, quality = raw["inference"], raw["quality"]
    threshold = inference["reference_value"] * inference["accuracy_ratio"]
    if threshold > quality["target"]:
        problems.append(
            f"$.inference.reference_value: {inference['reference_value']} x accuracy_ratio "
            f"{inference['accuracy_ratio']} = {threshold:.4g} is above the quality target "
            f"{quality['target']}, so a model trained to the target could fail inference accuracy"
        )
    problems += _cross_check_fidelity(raw)
    problems += _cross_check_convergence(raw, suite_raw)
    problems += _cross_check_profiles(raw, suite_raw)
    problems += _cross_check_table_cap(raw)
    problems += _cross_check_throughput(raw, suite_raw)
    return problems


def _cross_check_throughput(raw: dict, suite_raw: dict) -> list[str]:
    """Rules 1.2 throughput results: their batch sizes allowed by the recipe, and each profile's warm-up and
    timed steps within a full run's steps (a throughput run trains the first steps of a full run, at its
    learning rates): at every allowed batch size on a submittable profile, at the profile's own or the
    recipe's default batch on the others."""
    throughput = raw.get("throughput")
    if throughput is None:
        return []
    problems = []
    batch = raw["hyperparameters"]["tunable"].get("global_batch_size")
    for size in throughput["global_batch_sizes"]:
        allowed = batch is not None and (
            size in batch["choices"] if "choices" in batch else batch.get("min", 1) <= size <= batch.get("max", size)
        )
        if not allowed:
            problems.append(
                f"$.throughput.global_batch_sizes: {size} found / expected a global batch size the tunable "
                f"global_batch_size allows ({batch})"
            )
    for profile, spec in raw["profiles"].items():
        if profile not in suite_raw["profiles"]:
            continue  # _cross_check_profiles reports it
        counts = {**throughput, **spec.get("throughput", {})}
        training = {**raw["training"], **spec["training"]}
        rows = training.get("train_samples", raw["dataset"]["train_samples"])
        if suite_raw["profiles"][profile]["submittable"]:
            sizes = throughput["global_batch_sizes"]
        else:
            sizes = [training.get("global_batch_size", batch["default"] if batch else 1)]
        for size in sizes:
            most = training["max_epochs"] * (rows // size)
            if counts["warmup_steps"] + counts["timed_steps"] > most:
                problems.append(
                    f"$.profiles.{profile}.throughput: {counts['warmup_steps']} warm-up + {counts['timed_steps']} "
                    f"timed steps found / expected at most {most}, the steps of a full run at global batch {size}"
                )
    return problems


def _cross_check_fidelity(raw: dict) -> list[str]:
    """Rules 1.2's inference precisions and fidelity gate: every precision allowed has a tolerance and a
    threshold, and nothing else has; the gate set lies within the eval set; a classes gate's tolerances fit
    the reference's max_gap."""
    inference = raw["inference"]
    fidelity = inference.get("fidelity")
    if fidelity is None:
        return []
    problems = []
    allowed = inference.get("precisions", [raw["hyperparameters"]["fixed"].get("precision", "fp32")])
    for key in ("tolerance", "threshold"):
        if sorted(fidelity[key]) != sorted(allowed):
            problems.append(
                f"$.inference.fidelity.{key}: precisions {sorted(fidelity[key])} found / expected "
                f"{sorted(allowed)} (inference.precisions)"
            )
    if fidelity["samples"] > raw["dataset"]["eval_samples"]:
        problems.append(
            f"$.inference.fidelity.samples: {fidelity['samples']} found / expected at most the "
            f"{raw['dataset']['eval_samples']} eval rows"
        )
    max_gap = fidelity["reference"].get("max_gap")
    if fidelity["kind"] == "classes" and max_gap is None:
        problems.append("$.inference.fidelity.reference.max_gap: missing (a classes gate needs it)")
    elif max_gap is not None:
        for precision, tolerance in fidelity["tolerance"].items():
            if tolerance > max_gap:
                problems.append(
                    f"$.inference.fidelity.tolerance.{precision}: {tolerance} found / expected at most "
                    f"max_gap {max_gap} (the reference lists no class further from its top)"
                )
    return problems


def _cross_check_table_cap(raw: dict) -> list[str]:
    """A model whose tables are capped (model.architecture.max_table_rows) must generate its data with
    exactly the capped source cardinalities, so the rules cannot say one size and train another."""
    architecture = raw["model"].get("architecture", {})
    if "max_table_rows" not in architecture:
        return []
    source, cap = architecture.get("source_cardinalities", []), architecture["max_table_rows"]
    expected = [min(int(rows), cap) for rows in source]
    found = raw["dataset"].get("params", {}).get("cardinalities")
    if found != expected:
        return [
            f"$.dataset.params.cardinalities: found {show(found)} / expected {expected} "
            f"(model.architecture.source_cardinalities each capped at max_table_rows {cap})"
        ]
    return []


def convergence_test(suite_checks: dict) -> str:
    """How TRN009 judges convergence: suite.yaml's checks.convergence_test; rules 1.0 predates the key
    and means `welch`."""
    return suite_checks.get("convergence_test", "welch")


def _cross_check_convergence(raw: dict, suite_raw: dict) -> list[str]:
    """reference_convergence against the suite's convergence test: the shape it reads, known frameworks,
    and for `rcp` points the statistics can use (levelfield/ground/rcp.py)."""
    rcp = raw.get("reference_convergence")
    if rcp is None:
        return []  # absent until the task is calibrated
    method = convergence_test(suite_raw["checks"])
    shape = "points" if "points" in rcp else "seeds"
    if shape != {"welch": "seeds", "rcp": "points"}[method]:
        return [
            f"$.reference_convergence: found the {shape} shape / expected "
            f"{'points' if shape == 'seeds' else 'seeds'} (the shape {SUITE_FILE} checks.convergence_test "
            f"{method!r} reads)"
        ]
    return _cross_check_points(rcp, raw, suite_raw) if shape == "points" else _cross_check_seeds(rcp, suite_raw)


def _unknown_framework(where: str, framework: str, suite_raw: dict) -> list[str]:
    if framework in suite_raw["frameworks"]:
        return []
    return [f"{where}: not a framework of {SUITE_FILE} (expected one of: {', '.join(suite_raw['frameworks'])})"]


def _cross_check_seeds(rcp: dict, suite_raw: dict) -> list[str]:
    problems = []
    for framework, epochs in rcp["epochs_to_target"].items():
        where = f"$.reference_convergence.epochs_to_target.{framework}"
        problems += _unknown_framework(where, framework, suite_raw)
        if len(epochs) != len(rcp["seeds"]):
            problems.append(f"{where}: {len(epochs)} values for {len(rcp['seeds'])} seeds (expected one per seed)")
    return problems


def _cross_check_points(rcp: dict, raw: dict, suite_raw: dict) -> list[str]:
    from levelfield.ground.rcp import MIN_RUNS_PER_FRAMEWORK, pooled_epochs, population_stdev

    problems = []
    sizes = [point["global_batch_size"] for point in rcp["points"]]
    if sizes != sorted(set(sizes)):
        problems.append(
            f"$.reference_convergence.points: global_batch_size {sizes} found / expected ascending without "
            f"repeats ({sorted(set(sizes))}), one point per calibrated batch size"
        )
    for i, point in enumerate(rcp["points"]):
        where = f"$.reference_convergence.points[{i}]"
        for framework, epochs in point["epochs_to_target"].items():
            problems += _unknown_framework(f"{where}.epochs_to_target.{framework}", framework, suite_raw)
            if len(epochs) < MIN_RUNS_PER_FRAMEWORK:
                problems.append(
                    f"{where}.epochs_to_target.{framework}: {len(epochs)} runs found / expected at least "
                    f"{MIN_RUNS_PER_FRAMEWORK} per framework at a batch size (levelfield/ground/rcp.py)"
                )
        pooled = pooled_epochs(point["epochs_to_target"])
        if population_stdev(pooled) == 0:
            problems.append(
                f"{where}.epochs_to_target: every run at {pooled[0]} epochs found / expected a spread "
                f"(with none, the test would call any faster run too fast: calibrate with more seeds)"
            )
        if 2 * raw["training"]["olympic_drop"] >= len(pooled):
            problems.append(
                f"{where}.epochs_to_target: {len(pooled)} runs found / expected more than "
                f"2 x olympic_drop ({raw['training']['olympic_drop']})"
            )
    return problems


def _cross_check_profiles(raw: dict, suite_raw: dict) -> list[str]:
    problems = []
    for profile in sorted(set(suite_raw["profiles"]) - set(raw["profiles"])):
        problems.append(
            f"$.profiles: profile {profile!r} of {SUITE_FILE} is missing (every task defines every "
            f"profile's run lengths)"
        )
    for profile, spec in raw["profiles"].items():
        where = f"$.profiles.{profile}"
        if profile not in suite_raw["profiles"]:
            problems.append(
                f"{where}: not a profile of {SUITE_FILE} (expected one of: {', '.join(suite_raw['profiles'])})"
            )
            continue
        overrides = [key for key in ("quality", "inference") if key in spec]
        overrides += ["training.global_batch_size"] if "global_batch_size" in spec.get("training", {}) else []
        overrides += [
            f"{name}.latency_bound_ms"
            for name, run in spec.items()
            if isinstance(run, dict) and "latency_bound_ms" in run
        ]
        if overrides and suite_raw["profiles"][profile]["submittable"]:
            problems.append(
                f"{where}: a submittable profile may not override {' or '.join(overrides)} "
                f"(results must meet the task's own target and constraints)"
            )
        target = spec.get("quality", raw["quality"])["target"]
        reference = spec.get("inference", raw["inference"])["reference_value"]
        threshold = reference * raw["inference"]["accuracy_ratio"]
        if ("quality" in spec or "inference" in spec) and threshold > target:
            problems.append(
                f"{where}.inference.reference_value: {reference} x accuracy_ratio "
                f"{raw['inference']['accuracy_ratio']} = {threshold:.4g} is above the profile's "
                f"quality target {target}"
            )
    return problems
