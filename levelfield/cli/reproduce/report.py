"""The reproduction's report: environment differences first, then the verdict, as JSON and one paragraph.

differences = environment_differences(submitted_log, reproduced_log, code_ref)
write_report(out, document)         # out/reproduction.json, atomically
print(verdict_paragraph(document))
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.ground import mllog_keys as LK
from levelfield.ground.fsutil import atomic_write_text
from levelfield.ground.parse import MllogFile

if TYPE_CHECKING:
    from levelfield.cli.reproduce.recipe import OpenTree, TreeResult

REPORT_FILE = "reproduction.json"
# What the logs record about where a run ran, compared key by key (nested dicts flattened to dotted names).
ENVIRONMENT_KEYS = (
    LK.FRAMEWORK_VERSION,
    LK.COMPILE_MODE,
    LK.DETERMINISM,  # switches and thread counts: a rerun with others need not repeat the run bit for bit
    LK.DEVICE,
    LK.WORLD_SIZE,
    LK.LAUNCHER,  # its name only: a workload manager's job ids differ from job to job
    LK.DATASET_DIGEST,
    LK.SYSTEM_FINGERPRINT,
    LK.ENVIRONMENT,
)


def _flatten(value, prefix: str) -> dict:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out |= _flatten(item, f"{prefix}.{key}")
        return out
    return {prefix: value}


def environment_differences(submitted: dict, reproduced: dict) -> list[dict]:
    """[{"what", "submitted", "reproduced"}] for every recorded fact that differs, in a stable order."""
    a, b = {}, {}
    for key in ENVIRONMENT_KEYS:
        if key == LK.LAUNCHER and submitted.get(key) is None:
            continue  # logs written before the key existed: who started them is unknown, not different
        a |= _flatten(submitted.get(key), key)
        b |= _flatten(reproduced.get(key), key)
    return [
        {"what": key, "submitted": a.get(key), "reproduced": b.get(key)}
        for key in sorted(set(a) | set(b))
        if a.get(key) != b.get(key)
    ]


def log_facts(log: MllogFile) -> dict:
    """The ENVIRONMENT_KEYS a log records (of levelfield_launcher, who started the processes)."""
    facts = {key: log.value(key) for key in ENVIRONMENT_KEYS}
    if isinstance(facts[LK.LAUNCHER], dict):
        facts[LK.LAUNCHER] = {"name": facts[LK.LAUNCHER].get("name")}
    return facts


def same_hardware(differences: list[dict]) -> bool:
    """Whether no hardware fact differs: the device, the process count and the system fingerprint."""
    hardware = (LK.SYSTEM_FINGERPRINT, LK.DEVICE, LK.WORLD_SIZE)
    return not any(d["what"].split(".")[0] in hardware for d in differences)


def document_head(kind: str, tree: OpenTree, result: TreeResult, how: str) -> dict:
    """The fields every reproduction.json starts with: what was replayed, from which tree, how."""
    return {
        "kind": kind,
        "result": result.id,
        "tree": str(tree.root),
        "system": result.system,
        "task": result.task,
        "framework": result.framework,
        "rules_version": tree.suite.version,
        "how": how,
    }


def write_report(out: Path, document: dict) -> Path:
    path = out / REPORT_FILE
    atomic_write_text(path, json.dumps(document, indent=2, sort_keys=True, default=str) + "\n", overwrite=True)
    return path


def verdict_paragraph(document: dict) -> str:
    """One paragraph a person reads first: what was re-run, the verdict and why, what differed."""
    what = f"{document['kind']} result {document['result']} ({document['task']}, {document['framework']})"
    differences = document["environment_differences"]
    shown = ", ".join(d["what"] for d in differences[:6]) + (" ..." if len(differences) > 6 else "")
    env = (
        f"The environment differs in {len(differences)} recorded fact(s): {shown}."
        if differences
        else ("The recorded environment is the same.")
    )
    if document["reproduced"]:
        verdict = f"REPRODUCED: {what} re-run {document['how']}; every comparison holds."
    else:
        verdict = f"NOT REPRODUCED: {what} re-run {document['how']}: " + "; ".join(document["reasons"]) + "."
    return f"{verdict} {env}"
