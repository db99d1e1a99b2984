"""The second pass over an MLCommons Inference tree: each result's official figure and accuracy, by its round.

    label, rnd, findings = the_round(root, ruleset, loadgen_versions)   # MLI012 when there is none
    findings = score(rnd, row, read, mapping)       # fills the row's round, benchmark, field, metric, value
    counts, unowned = owned(findings, rows)         # the error codes each result owns; the tree's own errors

The first pass (inference.py) reads every file; this one needs the round,
which the LoadGen versions of all the tree's detail logs may be needed to tell.
A finding here names the result's folder, what it found and what the round
allows, and leaves every other result of the tree as it was.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from levelfield.checker.findings import ERROR, Finding
from levelfield.checker.mlcommons import rounds
from levelfield.checker.mlcommons.codes import finding
from levelfield.ground.parse import parse_json
from levelfield.ground.submission.tree import Tree

# A row's official part before the round is applied (or when it cannot be).
UNSCORED = {"round": None, "benchmark": None, "field": None, "metric": None, "value": None, "accuracy_judged": []}
# An Interactive folder holds a LoadGen Server run (the checker's get_performance_metric_check accepts the pair).
SAME_RUN = {("Interactive", "Server")}
MODEL_MAPPING = "model_mapping.json"  # the checker's --extra-model-benchmark-map default, in <division>/<submitter>/


@dataclass
class Read:
    """What the first pass read of one result, for the second."""

    folder: str  # <prefix>results/<system>/<model>/<scenario>
    detail_path: str  # its performance run's detail log
    scenario: str | None  # the scenario LoadGen ran
    values: dict = field(default_factory=dict, repr=False)  # of the detail log's {key: last value}, figure_values
    logged: bool = False  # the detail log holds any value at all
    accuracy_path: str = ""
    accuracy_text: str | None = None  # accuracy.txt, None when absent or unreadable (already a finding)


def the_round(root: Path, ruleset: str | None, versions: list[str]) -> tuple[str, rounds.Round | None, list[Finding]]:
    """(the report's rules_version, the round's rules or None, MLI012 when there are none)."""
    name, how = rounds.pick_round(root, ruleset, versions)
    known = rounds.known_rounds()
    if name is None:
        return "MLPerf Inference, round unknown", None, [finding("MLI012", ".", how, expected=known)]
    if name not in known:
        message = f"round {name} ({how}) is not one levelfield holds rules for: no figure is official"
        label = f"MLPerf Inference {name} (round from {how}; no rules held)"
        return label, None, [finding("MLI012", ".", message, found=name, expected=known)]
    return f"MLPerf Inference {name} (round from {how})", rounds.load_round(name), []


def figure_values(values: dict) -> dict:
    """Of a detail log's {key: value}, the keys any round's figure may be read from (every key with a unit in
    rules/mlcommons/inference.yaml; rounds.load_round refuses a round table naming another)."""
    keys = rounds.figure_keys()
    return {key: value for key, value in values.items() if key in keys}


def model_mapping(tree: Tree, prefix: str) -> dict:
    """The submitter's model_mapping.json ({folder name: benchmark}), {} when absent or not such an object."""
    raw = tree.read(f"{prefix}{MODEL_MAPPING}")
    data, error = (None, "absent") if raw is None else parse_json(raw)
    if error or not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _unknown(rnd: rounds.Round, row: dict, read: Read, benchmark: str | None) -> list[Finding]:
    findings = []
    model_folder = read.folder.rsplit("/", 1)[0]
    if benchmark is None:
        mapped = ", ".join(f"{k} -> {v}" for k, v in rnd.model_mapping.items())
        message = (
            f"benchmark folder {row['model']!r} is not a benchmark of MLPerf Inference {rnd.name}, nor mapped to one "
            f"(the round's benchmarks: {', '.join(rnd.models)}; its model_mapping: {mapped}; and the submitter's "
            f"{MODEL_MAPPING}; {rnd.file})"
        )
        findings.append(finding("MLI011", model_folder, message, found=row["model"], expected=list(rnd.models)))
    scenario = row["scenario"]
    if scenario not in rnd.scenarios:
        message = f"scenario folder {scenario!r} is not a scenario of MLPerf Inference {rnd.name} ({rnd.file})"
        findings.append(finding("MLI011", read.folder, message, found=scenario, expected=list(rnd.scenarios)))
    elif read.scenario is not None and read.scenario != scenario and (scenario, read.scenario) not in SAME_RUN:
        expected = next((ran for folder, ran in SAME_RUN if folder == scenario), scenario)
        message = (
            f"the run in scenario folder {scenario} is a {read.scenario} run (effective_scenario): the {rnd.name} "
            "checker reports a figure inferred from it, which levelfield does not compute"
        )
        findings.append(finding("MLI011", read.detail_path, message, found=read.scenario, expected=expected))
    return findings


def score(rnd: rounds.Round | None, row: dict, read: Read, mapping: dict) -> list[Finding]:
    """Fill the row's official figure and accuracy verdicts under the round; the findings of that (MLI001,
    MLI010, MLI011). Nothing without a round (MLI012 says why)."""
    if rnd is None:
        return []
    row["round"] = rnd.name
    benchmark = rnd.benchmark(row["model"], mapping)
    if unknown := _unknown(rnd, row, read, benchmark):
        return unknown
    row["benchmark"] = benchmark
    findings = []
    if read.scenario is not None and read.logged and (figure := rnd.figure(benchmark, read.scenario, read.values)):
        row.update(field=figure.field, metric=figure.metric, value=figure.value)
        if figure.value is None and row["loadgen_value"] is not None:  # else the first pass said the log lacks it
            message = f"no finite {figure.field}: the key the {rnd.name} checker reads for {benchmark} {read.scenario}"
            findings.append(finding("MLI001", read.detail_path, message, found=read.values.get(figure.field)))
    if read.accuracy_text is not None:
        findings += _accuracy(rnd, row, read, benchmark)
    return findings


def _accuracy(rnd: rounds.Round, row: dict, read: Read, benchmark: str) -> list[Finding]:
    findings, judged = [], rnd.judge_accuracy(benchmark, read.accuracy_text)
    row["accuracy_judged"] = [
        {"metric": j.metric, "kind": j.kind, "value": j.value, "bound": j.bound.value, "met": j.met} for j in judged
    ]
    if first := next((j for j in judged if j.kind == "minimum"), None):
        row["accuracy"] = {"name": first.metric, "value": first.value, "target": first.bound.value}
    for j in judged:
        if j.met:
            continue
        sign = ">=" if j.kind == "minimum" else "<="
        expected = f"{sign} {j.bound.value:.10g} ({j.bound.text}, {rnd.file})"
        if j.value is None:
            pattern = rnd.patterns[j.metric].pattern
            message = f"no line states {j.metric}, which {rnd.name} requires of {benchmark} (pattern {pattern!r})"
        else:
            side = "below the minimum" if j.kind == "minimum" else "above the upper limit"
            message = f"{j.metric} is {side} MLPerf Inference {rnd.name} sets for {benchmark}"
        findings.append(finding("MLI010", read.accuracy_path, message, line=j.line, found=j.value, expected=expected))
    return findings


def _owners(rows: list[dict]) -> dict[str, list[int]]:
    """{path: indices of the rows owning findings there}: a result owns its scenario folder, its compliance
    folder, its benchmark folder (with the other scenarios of it) and its system's description."""
    owners: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        folder = row["folder"]
        tail = f"results/{row['system']}/{row['model']}/{row['scenario']}"
        prefix = folder[: -len(tail)] if folder.endswith(tail) else ""
        paths = {
            folder,
            f"{prefix}compliance/{row['system']}/{row['model']}/{row['scenario']}",
            folder.rsplit("/", 1)[0],
            f"{prefix}systems/{row['system']}.json",
        }
        for path in paths:
            owners.setdefault(path, []).append(i)
    return owners


def owned(findings: list[Finding], rows: list[dict]) -> tuple[list[dict], list[Finding]]:
    """({code: count} of the active errors each row owns, in row order; the active errors no row owns)."""
    owners, counts, unowned = _owners(rows), [Counter() for _ in rows], []
    for f in findings:
        if f.severity != ERROR or f.waived is not None:
            continue
        parts = f.path.split("/")
        # The longest owned prefix: a scenario folder before its benchmark folder.
        hit = next((owners[p] for k in range(len(parts), 0, -1) if (p := "/".join(parts[:k])) in owners), None)
        if hit is None:
            unowned.append(f)
        for i in hit or []:
            counts[i][f.code] += 1
    return [dict(sorted(c.items())) for c in counts], unowned
