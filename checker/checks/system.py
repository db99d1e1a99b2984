"""System description checks: valid, filled in, matching its path, and matching the hardware the logs saw
(its fingerprint, its software, its nodes and the processes per node)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from levelfield.checker.checks.training import training_logs, training_results
from levelfield.checker.context import Context
from levelfield.checker.findings import Finding, check
from levelfield.ground import layout as L
from levelfield.ground import mllog_keys as LK
from levelfield.ground.parse import MllogFile, plain_int
from levelfield.ground.submission.records import Submission


def _systems(sub):
    return [s for s in sub.systems.values() if s.data is not None]  # unreadable ones are STR003's


@check("SYS001", "invalid-system-description", area="system")
def invalid_system_description(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a system description that fails its JSON Schema (types, units, enums), whose fingerprint
    digest does not match its content, or whose fingerprint disagrees with its own hardware keys.
    Why: MLPerf checks only that keys are present, so "1.5TiB" and "N/A" reach its results tables;
    levelfield needs typed values to compare declared with observed hardware and to render tables.
    Bad: "host_memory_capacity_gib": "512 GB", or an accelerator name edited after `levelfield sysinfo`.
    Fix: regenerate with `levelfield sysinfo --out FILE`, fill in only the <FILL: ...> fields, and
    validate with `levelfield sysinfo --check FILE`.
    """
    from levelfield.ground.sysinfo import description_problems, placeholder_paths

    for system in _systems(sub):
        placeholders = placeholder_paths(system.data)
        for problem in description_problems(system.data):
            if any(problem.startswith(f"{p}:") for p in placeholders):
                continue  # SYS003 reports placeholders
            where, _, why = problem.partition(": ")
            yield Finding.at(system.path, f"{where}: {why}", hint="check it with `levelfield sysinfo --check FILE`")


@check("SYS002", "system-path-mismatch", area="system")
def system_path_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the description's `submitter` or `division` differs from the folders it sits in.
    Why: the path decides under which organisation and division results are published; a description
    saying otherwise means files were moved between submissions.
    Bad: closed/acme/systems/box.json with "submitter": "Other Corp".
    Fix: make `submitter` equal the organisation folder and `division` the division folder.
    """
    for system in _systems(sub):
        if not isinstance(system.data, dict):
            continue
        for key, expected in (("submitter", sub.org), ("division", sub.division)):
            found = system.data.get(key)
            if isinstance(found, str) and found.startswith("<FILL"):
                continue  # SYS003
            if found != expected:
                yield Finding.at(
                    system.path,
                    f"{key} differs from the folder it is in",
                    found=found,
                    expected=expected,
                    hint=f"set {key} to {expected!r} or move the tree",
                )


@check("SYS003", "placeholder-left", area="system")
def placeholder_left(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a `<FILL: ...>` placeholder written by `levelfield sysinfo` is still in the description.
    Why: placeholders mark what only the vendor knows (submitter, system name, status, system type).
    Bad: "status": "<FILL: available, preview or rdi>".
    Fix: replace every <FILL: ...> with the real value.
    """
    from levelfield.ground.sysinfo import placeholder_paths

    for system in _systems(sub):
        for path in placeholder_paths(system.data):
            yield Finding.at(
                system.path, f"{path}: placeholder not filled in", hint="replace <FILL: ...> with the value"
            )


@check("SYS004", "unknown-system", area="system")
def unknown_system(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: results filed under a system id that has no systems/<system>.json.
    Why: a result without a hardware declaration cannot be placed in a table or cross-checked.
    Bad: results/box2/... with only systems/box.json.
    Fix: add systems/box2.json (`levelfield sysinfo`) or file the results under the right system.
    """
    for system in sorted({key[0] for key in sub.result_keys()}):
        if system not in sub.systems:
            yield Finding.at(
                f"{sub.path(L.RESULTS, system)}",
                "no system description for these results",
                expected=sub.path(L.SYSTEMS, L.system_file(system)),
                hint="add the description with `levelfield sysinfo --out FILE`",
            )


def observed_fingerprints(sub: Submission) -> Iterator[tuple[str, int | None, str, Any]]:
    """(path, line, system id, fingerprint) of every fingerprint a training log or result.json recorded."""
    for training in training_results(sub):
        for log in training.logs:
            line = log.first(LK.SYSTEM_FINGERPRINT)
            if line is not None:
                yield log.path, line.lineno, training.system, line.value
    for run in sub.inferences:
        if run.result is not None and isinstance(run.result.data, dict):
            yield run.result.path, None, run.system, run.result.data.get("system_fingerprint")


def hardware_differences(declared: dict, observed: Any, memory_ratio: float) -> list[str]:
    """`key: declared X, observed Y` for each hardware key that differs (host memory within `memory_ratio`)."""
    if not isinstance(observed, dict):
        return [f"fingerprint: expected an object, found {type(observed).__name__}"]
    out = []
    for key, want in declared.items():
        if key == "digest":
            continue
        got = observed.get(key)
        if key == "host_memory_capacity_gib" and _close(want, got, memory_ratio):
            continue
        if got != want:
            out.append(f"{key}: declared {want!r}, observed {got!r}")
    return out


def _close(declared, observed, ratio: float) -> bool:
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (declared, observed))
    return numbers and abs(observed - declared) <= ratio * abs(declared)


@check("SYS005", "hardware-mismatch", area="system")
def hardware_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the hardware a log observed (CPU model, cores, threads, memory, accelerator models and
    count, OS) differs from what the system description declares; host memory may differ by the
    rules' `checks.host_memory_tolerance_ratio`.
    Why: MLPerf trusts the declaration; a result measured on one machine and filed under another
    misleads every reader of the table.
    Bad: description declares 8x "H100 80GB", the training log observed 8x "A100 40GB".
    Fix: run on the declared system, or describe the system the runs used (`levelfield sysinfo`).
    """
    from levelfield.ground.sysinfo import fingerprint_content

    ratio = float(ctx.suite.checks["host_memory_tolerance_ratio"])
    for path, line, system_id, observed in observed_fingerprints(sub):
        system = sub.systems.get(system_id)
        if system is None or not isinstance(system.data, dict):
            continue  # SYS004 / STR003
        if observed is None:
            yield Finding.at(
                path,
                "no system_fingerprint recorded",
                line=line,
                hint="produce results with levelfield's runner and trainer, which record it",
            )
            continue
        if not isinstance(system.data.get("accelerators", []), list):
            continue  # SYS001 reports the type; fingerprint_content would iterate it
        declared = fingerprint_content(system.data)
        for difference in hardware_differences(declared, observed, ratio):
            yield Finding.at(
                path,
                f"observed hardware differs from {system.path}: {difference}",
                line=line,
                hint="file the result under the system it ran on",
            )


def _recorded_software(environment: dict) -> dict:
    """The software versions an environment fingerprint recorded, under the description's key names."""
    packages = environment.get("packages")
    recorded = dict(packages) if isinstance(packages, dict) else {}
    recorded.update({key: environment.get(key) for key in ("python", "levelfield") if key in environment})
    return recorded


@check("SYS006", "software-mismatch", area="system")
def software_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a software version the system description declares (its `software` block: Python,
    levelfield, the frameworks and libraries) differs from the version a result under that system
    recorded in its environment.json. Drivers the environment does not record are not compared.
    Why: the leaderboard shows the declared software next to the result; a description written
    before an upgrade, or edited after the runs, names a stack that did not produce the numbers.
    Bad: systems/box.json declares torch "2.14.0"; results/box/.../pytorch/environment.json records "2.13.0".
    Fix: regenerate the description on the machine, in the environment the runs used (`levelfield sysinfo`).
    """
    for (system_id, _task, _framework), file in sorted(sub.environments.items()):
        system = sub.systems.get(system_id)
        if system is None or not isinstance(system.data, dict) or not isinstance(file.data, dict):
            continue  # SYS004 / STR003
        declared = system.data.get("software")
        if not isinstance(declared, dict):
            continue  # SYS001
        recorded = _recorded_software(file.data)
        for key, version in sorted(declared.items()):
            if key in recorded and recorded[key] != version:
                yield Finding.at(
                    system.path,
                    f"software.{key} is {version!r}, but {file.path} recorded {recorded[key]!r}",
                    found=repr(version),
                    expected=repr(recorded[key]),
                    hint="regenerate the description in the runs' environment (`levelfield sysinfo --out FILE`)",
                )


@check("SYS007", "fingerprint-digest-mismatch", area="system")
def fingerprint_digest_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a hardware fingerprint a training log or result.json recorded whose `digest` is not the
    SHA-256 of its own content.
    Why: the digest identifies the machine a result ran on (runs of one system share it); a digest that
    does not match its content was edited, or its content was.
    Bad: result.json's system_fingerprint.digest changed to another machine's digest.
    Fix: submit the logs and result files the trainer and runner wrote, unedited.
    """
    from levelfield.ground.sysinfo import compute_fingerprint_digest

    for path, line, _system_id, observed in observed_fingerprints(sub):
        if not isinstance(observed, dict) or "digest" not in observed:
            continue  # SYS005 / STR010 report a missing or malformed fingerprint
        try:
            digest = compute_fingerprint_digest(observed)
        except (TypeError, ValueError):  # a value JSON cannot encode again (e.g. NaN): STR003 / STR010
            continue
        if observed["digest"] != digest:
            yield Finding.at(
                path,
                "the hardware fingerprint's digest is not the digest of its content",
                line=line,
                found=repr(observed["digest"]),
                expected=digest,
                hint="submit the files levelfield wrote, unedited",
            )


def _declared_int(data: dict, key: str, low: int) -> int | None:
    """A per-node count of the description, or None when it is not an integer >= low (SYS001's)."""
    value = data.get(key)
    return value if plain_int(value) and value >= low else None


def _logged_int(log: MllogFile, key: str) -> tuple[int | None, int | None]:
    """(the key's first value when an integer >= 1, its line); (None, line) for any other value (TRN017's)."""
    line = log.first(key)
    if line is None:
        return None, None
    return (line.value if plain_int(line.value) and line.value >= 1 else None), line.lineno


@check("SYS008", "process-layout-mismatch", area="system")
def process_layout_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a training log's levelfield_nodes (1 when not logged) differs from the system description's
    number_of_nodes; its levelfield_world_size is not a multiple of that node count; or its processes per
    node (world size / nodes) exceed the processing units a node declares: accelerators_per_node when it is
    above 0 (one process per accelerator), else host_threads_per_node (a CPU system).
    Why: the leaderboard shows a result next to the hardware its description declares and prices it per
    node; a run on more hosts than declared, an uneven spread of processes, or more processes than a node
    has accelerators (or CPU threads) was not measured on the system it is filed under.
    Bad: levelfield_nodes 2 under a description declaring "number_of_nodes": 1; levelfield_world_size 3
    over 2 nodes; 4 processes per node where "accelerators_per_node": 2.
    Fix: describe the system the runs used (`levelfield sysinfo`, then set number_of_nodes), and train with
    `levelfield train --nproc N --nnodes M`, N at most the accelerators (or CPU threads) of a node.
    """
    for training, log in training_logs(sub):
        system = sub.systems.get(training.system)
        if system is None or not isinstance(system.data, dict):
            continue  # SYS004 / STR003
        declared = _declared_int(system.data, "number_of_nodes", 1)
        nodes, nodes_line = _logged_int(log, LK.NODES)
        if nodes_line is None:
            nodes = 1  # logs written before the key existed ran on one node
        if nodes is None:
            continue  # TRN017
        if declared is not None and nodes != declared:
            yield Finding.at(
                log.path,
                f"{LK.NODES} differs from the number_of_nodes of {system.path}",
                line=nodes_line,
                found=nodes if nodes_line is not None else "1 (not logged: one node)",
                expected=declared,
                hint="file the result under a description of the hosts it ran on",
            )
        world, world_line = _logged_int(log, LK.WORLD_SIZE)
        if world is None:
            continue  # TRN001 / TRN017
        if world % nodes:
            yield Finding.at(
                log.path,
                f"{LK.WORLD_SIZE} does not spread evenly over {nodes} nodes",
                line=world_line,
                found=world,
                expected=f"a multiple of {nodes} (the same processes on every node)",
                hint="train with `levelfield train --nproc N --nnodes M`: N processes on each of M nodes",
            )
            continue
        accelerators = _declared_int(system.data, "accelerators_per_node", 0)
        key = "accelerators_per_node" if accelerators else "host_threads_per_node"
        units = accelerators or _declared_int(system.data, key, 1)
        if units is not None and world // nodes > units:
            yield Finding.at(
                log.path,
                f"more processes per node than {key} of {system.path}",
                line=world_line,
                found=f"{world // nodes} ({world} processes over {nodes} node{'s' if nodes > 1 else ''})",
                expected=f"<= {units}",
                hint="one process per accelerator (per CPU thread on a CPU system): lower --nproc",
            )
