"""Build a submission tree from run folders: `levelfield package`.

    from levelfield.tools.package import PackageOptions, package
    package(PackageOptions(runs=[Path("runs")], system=Path("systems/box.json"), org="acme",
                           division="closed", out=Path("submission")))

Run folders are found below each --runs DIR: a folder holding result_<i>.txt
is a training result (task and framework read from its logs), a folder
holding result.json an inference run (task, framework, scenario, mode from
it). A performance run folder holds its repeats in run_1/ .. run_N/, each
with LoadGen's summary and detail logs; a folder without them (written
before `levelfield infer` ran repeats) or with a gap in their numbering is
refused. A throughput-only training log (`levelfield train --throughput-only`:
no evaluation, no target) is a training-throughput result under rules that
have them (1.2: its task's `throughput` section), filed under
<framework>/throughput/ beside training/, and refused under rules without
them (1.0, 1.1), where it is never a result. Files are copied into the
layout of `levelfield/ground/layout.py`, never edited; the tree is built
in a temporary folder beside --out, its MANIFEST written last, and renamed
into place, so an interrupted package leaves no partial tree and two
concurrent packages to one --out cannot interleave.

Runs of a plugin's framework (docs/plugins.md) bring the plugin's code: its
files, as its RECORD names them, under code/plugins/<distribution>/ and its
name, version and digest in code/plugins.json. The plugin must be installed
here with the digest the runs recorded, and the rules must admit plugins in
the division (`plugin_divisions`: the open division in rules 1.2).
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from levelfield import __version__
from levelfield.ground import layout as L
from levelfield.ground import mllog_keys as LK
from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import (
    DEFAULT_READ_LIMIT_BYTES,
    atomic_write_bytes,
    atomic_write_text,
    read_text_limited,
    sha256_file,
)
from levelfield.ground.parse import parse_json, parse_mllog
from levelfield.ground.scaling import REFERENCE_FOLDER
from levelfield.ground.signing import private_key_paths
from levelfield.ground.training_log import throughput_only_mark
from levelfield.tools.package_plugins import plugin_code

MAX_RUN_FILE_BYTES = 64 * 1024 * 1024  # the checker's own per-file limit


@dataclass
class PackageOptions:
    runs: list[Path]
    system: Path
    org: str
    division: str
    out: Path
    force: bool = False
    code: Path | None = None  # open division: the submitter's code folder


@dataclass(frozen=True)
class Compressed:
    """A source file stored gzip-compressed in the tree (deterministic: no name, mtime 0)."""

    source: Path


@dataclass
class TrainingLog:
    source: Path
    task: str
    framework: str
    environment: dict | None
    rules_version: str | None
    kind: str = L.TRAINING  # L.TRAINING (time to train) or L.THROUGHPUT (a training-throughput result)


@dataclass
class InferenceRunDir:
    source: Path
    task: str
    framework: str
    scenario: str
    mode: str
    environment: dict | None
    rules_version: str | None


def _regular_files(folder: Path):
    for root, dirs, files in os.walk(folder, followlinks=False):
        # A `--scaling` run's 1-process reference (scaling_reference/) is that result's yardstick, logged in
        # its every log, not a result of its own: its runs would join the N-process ones in one folder.
        dirs[:] = sorted(d for d in dirs if d != REFERENCE_FOLDER)
        for name in sorted(files):
            path = Path(root) / name
            if not path.is_symlink():
                yield path


def discover(runs: list[Path]) -> tuple[list[TrainingLog], list[InferenceRunDir]]:
    """Training logs and inference run folders below every --runs folder."""
    trainings, inferences = [], []
    for base in runs:
        if not base.is_dir():
            raise UserError(f"{base}: not a folder (expected a folder written by levelfield train or infer)")
        for path in _regular_files(base):
            if L.TRAINING_LOG.match(path.name):
                trainings.append(_training_log(path))
            elif path.name == "result.json":
                inferences.append(_inference_run(path))
    if not trainings and not inferences:
        raise UserError(
            f"{', '.join(map(str, runs))}: no runs found (expected result_<i>.txt from `levelfield "
            f"train` or result.json from `levelfield infer`)"
        )
    return trainings, inferences


def _training_log(path: Path) -> TrainingLog:
    log = parse_mllog(read_text_limited(path, MAX_RUN_FILE_BYTES).encode("utf-8"), str(path))
    task, framework = log.value("submission_benchmark"), log.value(LK.FRAMEWORK)
    if not isinstance(task, str) or not isinstance(framework, str):
        raise UserError(
            f"{path}: no submission_benchmark / levelfield_framework lines (expected a log written by levelfield train)"
        )
    mark = throughput_only_mark(log)
    version = log.value(LK.RULES_VERSION)
    kind = L.TRAINING
    if mark is not None:  # trained N steps with no evaluation and no target: nothing to rank by time to train
        if not has_throughput_results(version, task):
            raise UserError(
                f"{path}: line {mark[0].lineno} holds {mark[1]}: a throughput-only run "
                f"(levelfield train --throughput-only) is never a time-to-accuracy result, and rules "
                f"{version!r} have no training-throughput results for {task!r}",
                hint=f"leave {path.parent} out of --runs; package the folders of time-to-accuracy runs, "
                "or train throughput under rules that rank it (--rules-version 1.2)",
            )
        kind = L.THROUGHPUT
    return TrainingLog(path, task, framework, log.value(LK.ENVIRONMENT), version, kind)


@functools.cache
def has_throughput_results(rules_version: object, task: str) -> bool:
    """Whether the shipped rules `rules_version` rank training throughput for `task` (its `throughput` section)."""
    from levelfield.rules import load_suite

    try:
        suite = load_suite(rules_version) if isinstance(rules_version, str) else None
    except UserError:
        return False
    return suite is not None and task in suite.tasks and suite.task(task).throughput is not None


def _inference_run(path: Path) -> InferenceRunDir:
    data, error = parse_json(read_text_limited(path, DEFAULT_READ_LIMIT_BYTES).encode("utf-8"))
    if error or not isinstance(data, dict):
        raise UserError(f"{path}: {error or 'not a JSON object'} (expected result.json written by levelfield infer)")
    missing = [k for k in ("task", "framework", "scenario", "mode") if not isinstance(data.get(k), str)]
    if missing:
        raise UserError(f"{path}: no {', '.join(missing)} (expected result.json written by levelfield infer)")
    if data.get("status") != "completed":
        raise UserError(
            f"{path}: the run's status is {data.get('status')!r}, not 'completed'; an aborted or "
            f"failed run is never a result",
            hint="re-run it, or leave its folder out of --runs",
        )
    return InferenceRunDir(
        path.parent,
        data["task"],
        data["framework"],
        data["scenario"],
        data["mode"],
        data.get("environment"),
        data.get("rules_version"),
    )


def _run_file(run: InferenceRunDir, source: Path) -> Path:
    if not source.is_file() or source.is_symlink():
        raise UserError(f"{source}: missing (expected the files `levelfield infer --mode {run.mode}` writes)")
    return source


def repeat_indices(folder: Path) -> list[int]:
    """1..N: the repeats of a performance run folder (its run_<i>/ folders); UserError without any, or
    with a gap in their numbering (a deleted repeat may be the slow one)."""
    indices = sorted(
        i for p in folder.iterdir() if (i := L.repeat_index(p.name)) is not None and p.is_dir() and not p.is_symlink()
    )
    if not indices:
        raise UserError(
            f"{folder}: a performance run folder without run_<i>/ folders (expected run_1/ .. run_N/, "
            f"one per repeat, each with {' and '.join(L.LOADGEN_FILES)}); it was written before "
            f"`levelfield infer` ran repeats",
            hint="re-run it with `levelfield infer --mode performance`",
        )
    gaps = sorted(set(range(1, indices[-1] + 1)) - set(indices))
    if gaps:
        raise UserError(
            f"{folder}: the numbering of its repeats has gaps: found "
            f"{', '.join(L.repeat_folder(i) for i in indices)}, expected run_1 .. run_{indices[-1]} "
            f"(missing {', '.join(L.repeat_folder(i) for i in gaps)})",
            hint="package the folder as `levelfield infer` wrote it, or re-run it",
        )
    return indices


def _load_system(path: Path, org: str, division: str) -> tuple[str, dict]:
    from levelfield.ground.sysinfo import description_problems, placeholder_paths
    from levelfield.ground.validation import load_document

    system_id = path.name[: -len(".json")] if path.name.endswith(".json") else ""
    if not L.ID_PATTERN.match(system_id):
        raise UserError(
            f"{path}: the file name gives the system id; expected <id>.json with letters, digits, "
            f"'.', '_', '-' (found {path.name!r})"
        )
    desc = load_document(path)
    problems = [f"{p}: placeholder not filled in" for p in placeholder_paths(desc)] or description_problems(desc)
    for key, want in (("submitter", org), ("division", division)):
        if not problems and desc.get(key) != want:
            problems.append(
                f"$.{key}: expected {want!r} (from --{'org' if key == 'submitter' else key}), got {desc.get(key)!r}"
            )
    if problems:
        raise UserError(
            "\n".join(f"{path}: {p}" for p in problems),
            hint="fill in the description and validate it with `levelfield sysinfo --check FILE`",
        )
    return system_id, desc


def _one(values: set, what: str, hint: str):
    values = {json.dumps(v, sort_keys=True) for v in values}
    if len(values) != 1:
        raise UserError(f"runs disagree on {what}: {', '.join(sorted(values))[:300]}", hint=hint)
    return json.loads(values.pop())


def plan(options: PackageOptions) -> dict[str, Path | Compressed | str]:
    """{relative path in the tree: source file, file to compress, or text to write}; UserError on bad input."""
    if options.division == "closed" and options.code is not None:
        raise UserError(
            "--code: the closed division runs levelfield's reference code; only the open division "
            "ships its own code folder"
        )
    if not L.ID_PATTERN.match(options.org):
        raise UserError(f"--org {options.org!r}: expected letters, digits, '.', '_', '-' (it becomes a folder name)")
    system_id, _ = _load_system(options.system, options.org, options.division)
    trainings, inferences = discover(options.runs)
    base = f"{options.division}/{options.org}"
    files: dict[str, Path | str] = {f"{base}/{L.SYSTEMS}/{L.system_file(system_id)}": options.system}
    environments: dict[tuple, list] = defaultdict(list)
    by_result: dict[tuple, list[TrainingLog]] = defaultdict(list)
    for log in trainings:
        by_result[(log.task, log.framework, log.kind)].append(log)
        environments[(log.task, log.framework)].append(log.environment)
    for (task, framework, kind), logs in sorted(by_result.items()):
        folder = f"{L.result_dir(base, system_id, task, framework)}/{kind}"
        for index, log in enumerate(logs):  # renumbered 0..N-1 in discovery order
            files[f"{folder}/result_{index}.txt"] = log.source
    seen: dict[tuple, Path] = {}
    for run in inferences:
        key = (run.task, run.framework, run.scenario, run.mode)
        if key in seen:
            raise UserError(
                f"{run.source} and {seen[key]}: two {run.mode} runs of {run.task} {run.framework} "
                f"{run.scenario}; a submission holds one",
                hint="leave one of them out of --runs",
            )
        seen[key] = run.source
        environments[(run.task, run.framework)].append(run.environment)
        folder = f"{L.result_dir(base, system_id, run.task, run.framework)}/{run.scenario}/{run.mode}"
        for name in L.MODE_FILES[run.mode]:
            source = _run_file(run, run.source / (L.ACCURACY_LOG if name == L.ACCURACY_LOG_STORED else name))
            files[f"{folder}/{name}"] = Compressed(source) if name == L.ACCURACY_LOG_STORED else source
        if run.mode == L.PERFORMANCE:
            for index in repeat_indices(run.source):
                for name in L.LOADGEN_FILES:  # LoadGen's empty accuracy log and trace stay behind
                    source = _run_file(run, run.source / L.repeat_folder(index) / name)
                    files[f"{folder}/{L.repeat_folder(index)}/{name}"] = source
    for (task, framework), envs in sorted(environments.items()):
        env = envs[0]  # the checker compares every run's environment with this capture (REP001)
        files[f"{L.result_dir(base, system_id, task, framework)}/{L.ENVIRONMENT}"] = json.dumps(env, indent=2) + "\n"
    rules_versions = {r.rules_version for r in (*trainings, *inferences)}
    commits = {(e or {}).get(LK.GIT, {}).get("commit") for envs in environments.values() for e in envs}
    # The levelfield the runs recorded, not this packager's (a tree packaged by a later release still
    # names the code that produced it): the checker holds both values to the runs' records (RUL003).
    versions = {(e or {}).get("levelfield", __version__) for envs in environments.values() for e in envs}
    code_ref = {
        LK.VERSION: _one(versions, "the levelfield version", "produce all runs with one release"),
        "git_commit": _one(commits, "the levelfield commit", "produce all runs from one checkout"),
        "rules_version": _one(rules_versions, "the rules version", "produce all runs with one release"),
    }
    files[f"{base}/{L.CODE}/{L.CODE_REF}"] = json.dumps(code_ref, indent=2) + "\n"
    files.update(plugin_code(options.division, base, environments, code_ref["rules_version"]))
    if options.code is not None:
        if not options.code.is_dir():
            raise UserError(f"--code {options.code}: not a folder")
        for path in _regular_files(options.code):
            files[f"{base}/{L.CODE}/{L.CODE_SRC}/{path.relative_to(options.code).as_posix()}"] = path
    _refuse_private_keys(files)
    return files


def _refuse_private_keys(files: dict[str, Path | Compressed | str]) -> None:
    """UserError when a file headed for the tree holds a private key: a published tree would leak it."""

    def source(rel: str) -> Path | str:
        value = files[rel]
        return value.source if isinstance(value, Compressed) else value

    contents = {rel: s.encode() if isinstance(s, str) else s.read_bytes() for rel in files if (s := source(rel))}
    leaked = private_key_paths(contents)
    if leaked:
        shown = ", ".join(str(source(rel)) if isinstance(source(rel), Path) else rel for rel in leaked)
        raise UserError(
            f"{shown}: holds a private key; a submission tree is published, so it never carries one",
            hint="move the key out of the runs and code folders; sign the packaged tree with `levelfield sign`",
        )


def package(options: PackageOptions) -> Path:
    """Write the tree to options.out; returns it. Refuses an existing --out unless force."""
    out = options.out
    if (out.exists() or out.is_symlink()) and not options.force:
        raise UserError(
            f"{out}: already exists; not overwriting a submission", hint="choose another --out, or pass --force"
        )
    files = plan(options)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        digests = []
        for rel, source in sorted(files.items()):
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(source, Path):
                _copy(source, target, shown=out / rel)
            elif isinstance(source, Compressed):
                with source.source.open("rb") as f:
                    atomic_write_bytes(target, gzip.compress(f.read(), compresslevel=9, mtime=0))
            else:
                atomic_write_text(target, source)
            digests.append(f"{sha256_file(target)}  {rel}\n")
        atomic_write_text(staging / L.MANIFEST, "".join(digests))
        _swap_into_place(staging, out, options.force)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return out


def _copy(source: Path, target: Path, shown: Path) -> None:
    """Copy one file into the staging tree; a failure (a full disk) names the file, not a traceback."""
    try:
        shutil.copyfile(source, target, follow_symlinks=False)
    except OSError as e:
        raise UserError(
            f"{shown}: cannot write ({e.strerror}) while copying {source}",
            hint="nothing was written; free disk space and run again",
        ) from None


def _swap_into_place(staging: Path, out: Path, force: bool) -> None:
    old = None
    if force and (out.exists() or out.is_symlink()):
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
        os.rename(out, old / "tree")
    try:
        os.rename(staging, out)  # fails if another package created `out` meanwhile: that one wins
    except OSError as e:
        if old is not None:
            os.rename(old / "tree", out)
        raise UserError(
            f"{out}: could not be created ({e.strerror}); another package may have written it",
            hint="check the folder; nothing was overwritten",
        ) from None
    finally:
        if old is not None and old.exists():
            shutil.rmtree(old, ignore_errors=True)
