"""MLCommons Inference trees: every LoadGen log read robustly, each result scored from its detail log and checked.

    report = check_inference_tree(Path("inference_results_v4.1"), ruleset=None)
    report.findings                  # MLI001-MLI012, each with file and line
    report.scores                    # one row per (division, submitter, system, model, scenario)
    report.rules_version             # "MLPerf Inference v4.1 (round from the path's folder inference_results_v4.1)"

Layout: `<division>/<submitter>/` (or one submitter folder as the root) holding
`results/<system>/<model>/<Scenario>/{performance/run_1/, accuracy/}`,
`compliance/<system>/<model>/<Scenario>/TEST0x/` and `systems/<system>.json`;
`measurements/` is not read. The tree is listed once by the checker's bounded
reader (no link followed, sizes capped) and each file is read when its result
is judged, then dropped: what stays in memory per result is its row, its
findings and the few detail-log values the second pass reads, so a round of
thousands of results is judged in bounded memory.

Each result is read in two passes. The first reads every file and computes
the run's LoadGen metric from its detail log (MLLOG lines) as levelfield
computes it for its own runs (`levelfield.ground.metrics.scenario_metric` at
the percentile LoadGen logged as effective_target_latency_percentile), compared
with the value the summary prints, within the precision either file prints.
The second, once the round is known (`rounds.py`: --mlcommons-ruleset, the
path, the LoadGen versions), takes the official figure and judges accuracy
as that round's MLCommons checker does (`official.py`). docs/mlcommons.md says
what is checked and what is not.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

import levelfield.rules
from levelfield.checker.engine import Report
from levelfield.checker.findings import Finding
from levelfield.checker.mlcommons import loadgen_files as lf
from levelfield.checker.mlcommons import official
from levelfield.checker.mlcommons.codes import CODES, finding
from levelfield.checker.mlcommons.layout import DIVISIONS, INFERENCE
from levelfield.ground.errors import UserError
from levelfield.ground.loadgen_names import SCENARIO_NAMES, STREAM_SCENARIOS
from levelfield.ground.metrics import NS_PER_MS, percentile_latency_ns, scenario_metric
from levelfield.ground.parse import MllogFile, decode, finite_number, parse_json, parse_mllog
from levelfield.ground.submission.tree import Tree, read_tree

# MLCommons' own run-length minimums (its mlperf.conf), kept as data beside levelfield's rules versions.
RULES_FILE = Path(levelfield.rules.__file__).parent / "mlcommons" / "inference.yaml"
CODE_PREFIX = "MLI"
SUMMARY, DETAIL = "mlperf_log_summary.txt", "mlperf_log_detail.txt"
ACCURACY_LOG, ACCURACY_TXT = "mlperf_log_accuracy.json", "accuracy.txt"
RUN = "performance/run_1"
CHANGED = "no longer a regular file within the size limit (changed after the tree was listed)"
LOWER_SCENARIO = {name: lower for lower, name in SCENARIO_NAMES.items()}
# LoadGen's reasons for INVALID: the detail log's result flags and how the summary words them.
VALIDITY_FLAGS = {
    "result_min_duration_met": "min duration not met",
    "result_min_queries_met": "min queries not met",
    "early_stopping_met": "early stopping not met",
    "result_perf_constraints_met": "performance (latency) constraints not met",
}
# The run's effective settings compared with the rules' minimums (MLI005), by rules name.
SETTINGS = {
    "min_duration_ms": "effective_min_duration_ms",
    "min_query_count": "effective_min_query_count",
    "min_sample_count": "effective_min_sample_count",
}


@dataclass
class Result:
    division: str | None
    submitter: str
    system: str
    model: str
    scenario: str  # as the folder spells it: Offline, Server, SingleStream, MultiStream
    folder: str  # results/<system>/<model>/<scenario>, relative to the root
    compliance: str  # compliance/<system>/<model>/<scenario>


@dataclass
class Run:
    """What one performance run's two logs say (None where they do not say it)."""

    scenario: str | None = None  # the scenario LoadGen ran (effective_scenario; else the folder's)
    metric: str | None = None  # levelfield's metric, name with unit: p90_latency_ms, samples_per_s
    value: float | None = None  # from the detail log
    summary_value: float | None = None  # the summary's, in the metric's unit
    validity: str | None = None
    validity_line: int | None = None
    loadgen_version: str | None = None
    warnings: int | None = None  # the summary's count
    values: dict = field(default_factory=dict, repr=False)  # the detail log's {key: last value}


@dataclass
class Submission:
    division: str | None
    submitter: str
    prefix: str  # "" or "<division>/<submitter>/"
    results: list[Result] = field(default_factory=list)
    versions: dict[str, list[str]] = field(default_factory=dict)  # LoadGen version -> detail logs
    # The tree's {folder: (sub-folder names, file names)}, shared by every submission: looking a folder's
    # entries up, not scanning the tree per result, keeps a round of thousands of results linear.
    listing: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict, repr=False)


def load_rules() -> dict:
    return yaml.safe_load(RULES_FILE.read_text())


def _submissions(root: Path, tree: Tree) -> list[Submission]:
    """The submitter folders below the root (or the root itself), each with its scenario folders."""
    if any(d in tree.dirs for d in DIVISIONS):
        bases = [
            (d.split("/")[0], d.split("/")[1], d + "/")
            for d in sorted(tree.dirs)
            if d.count("/") == 1 and d.split("/")[0] in DIVISIONS
        ]
    else:
        parent = root.resolve().parent.name
        bases = [(parent if parent in DIVISIONS else None, root.resolve().name, "")]
    listing = _listing(tree)
    out = {prefix: Submission(division, submitter, prefix, listing=listing) for division, submitter, prefix in bases}
    depth = 2 if "" not in out else 0  # the folders of <division>/<submitter>/, or of the root
    for d in sorted(tree.dirs):
        parts = d.split("/")
        sub = out.get("".join(f"{p}/" for p in parts[:depth]))
        if sub is not None and len(parts) == depth + 4 and parts[depth] == "results":
            system, model, scenario = parts[depth + 1 :]
            compliance = f"{sub.prefix}compliance/{system}/{model}/{scenario}"
            sub.results.append(Result(sub.division, sub.submitter, system, model, scenario, d, compliance))
    return list(out.values())


def _listing(tree: Tree) -> dict[str, tuple[list[str], list[str]]]:
    """{folder: (its sub-folders' names, its files' names)}, each sorted; "" is the root."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for index, paths in ((0, tree.dirs), (1, tree.files)):
        for path in paths:
            parent, _, name = path.rpartition("/")
            out.setdefault(parent, ([], []))[index].append(name)
    for dirs, files in out.values():
        dirs.sort()
        files.sort()
    return out


def _file(tree: Tree, path: str, findings: list, missing_is_finding: bool = True) -> bytes | None:
    """The file's bytes, read now (the tree is lazy: nothing is kept after its result is judged)."""
    if path not in tree.files:
        if missing_is_finding:
            findings.append(finding("MLI002", path, "missing"))
        return None
    data = tree.read(path)
    if data is None:
        findings.append(finding("MLI001", path, f"not read: {CHANGED}"))
    return data


def _detail(tree: Tree, path: str, findings: list, sub: Submission) -> MllogFile | None:
    raw = _file(tree, path, findings)
    if raw is None:
        return None
    log = parse_mllog(raw, path)
    for lineno, why in log.errors:
        findings.append(finding("MLI001", path, f"not a readable MLLOG line: {why}", line=lineno or None))
    version = log.value("loadgen_version")
    if isinstance(version, str):
        sub.versions.setdefault(version, []).append(path)
    elif not log.errors:
        findings.append(finding("MLI001", path, "no loadgen_version entry: not a LoadGen detail log"))
    return log


def _check_run(tree: Tree, folder: str, scenario: str, findings: list, sub: Submission) -> Run:
    """Summary and detail log of one performance run: read, the metric computed, the two compared."""
    summary_path, detail_path = f"{folder}/{SUMMARY}", f"{folder}/{DETAIL}"
    log = _detail(tree, detail_path, findings, sub)
    for line in [] if log is None else log.lines:
        if line.metadata.get("is_error") is True:
            message = f"LoadGen logged an error ({line.key}): {str(line.value)[:200]}"
            findings.append(finding("MLI009", detail_path, message, line=line.lineno))
    summary = None
    raw = _file(tree, summary_path, findings)
    if raw is not None:
        summary, problems = lf.parse_summary(raw)
        for lineno, why in problems:
            findings.append(finding("MLI001", summary_path, why, line=lineno or None))
    values = {} if log is None else log.values()
    ran = _ran(values, scenario)
    lower = LOWER_SCENARIO.get(ran)
    percentile = values.get("effective_target_latency_percentile") if lower in STREAM_SCENARIOS else None
    name, value, native = _metric(values, ran, percentile, detail_path if log is not None else None, findings)
    if summary is not None and log is not None:
        _compare(summary, summary_path, values, native, percentile, findings)
    validity, version = values.get("result_validity"), values.get("loadgen_version")
    validity_entry = None if log is None else log.last("result_validity")
    return Run(
        scenario=ran,
        metric=name,
        value=value,
        summary_value=_summary_in_metric_unit(summary, lower),
        validity=validity if isinstance(validity, str) else None,
        validity_line=None if validity_entry is None else validity_entry.lineno,
        loadgen_version=version if isinstance(version, str) else None,
        warnings=None if summary is None else summary.warnings,
        values=values,
    )


def _ran(values: dict, folder_scenario: str) -> str | None:
    """The scenario LoadGen ran, as its detail log states it (effective_scenario), else the folder's name when
    LoadGen has such a scenario; None when neither names one (an Interactive folder's run is a Server run)."""
    logged = values.get("effective_scenario")
    if isinstance(logged, str) and logged in LOWER_SCENARIO:
        return logged
    return folder_scenario if folder_scenario in LOWER_SCENARIO else None


def _metric(values: dict, scenario: str | None, percentile, detail_path: str | None, findings: list) -> tuple:
    """(metric name with unit, value, value in the unit the summary prints: ns for latencies), as levelfield
    computes it for its own runs; findings on `detail_path` (None: no log, already a finding) when the log
    does not define it."""
    lower = LOWER_SCENARIO.get(scenario)
    if lower is None:
        if detail_path is not None:
            why = "no effective_scenario naming a LoadGen scenario, and the folder's name is none either"
            findings.append(finding("MLI001", detail_path, why, expected=list(LOWER_SCENARIO)))
        return None, None, None
    if lower in STREAM_SCENARIOS and not (finite_number(percentile) and 0 < percentile < 1):
        if detail_path is not None:
            why = "no effective_target_latency_percentile between 0 and 1: the latency metric is not defined"
            findings.append(finding("MLI001", detail_path, why, found=percentile))
        return None, None, None
    name, value = scenario_metric(values, lower, percentile)
    if not finite_number(value):  # absent, or NaN / Infinity, which an MLLOG line may hold
        if detail_path is not None:
            message = f"the detail log states no finite {name} result for {scenario}"
            findings.append(finding("MLI001", detail_path, message, found=value))
        return name, None, None
    if lower not in STREAM_SCENARIOS:
        return name, value, value
    # The latency as logged (integer ns), so its precision is the detail log's: scenario_metric's choice of key.
    per_query = percentile_latency_ns(values, percentile, per_query=True) if lower == "multistream" else None
    native = per_query if finite_number(per_query) else percentile_latency_ns(values, percentile)
    return name, value, native


def _summary_in_metric_unit(summary: lf.Summary | None, lower: str | None) -> float | None:
    if summary is None or summary.metric is None:
        return None
    return summary.metric / NS_PER_MS if lower in STREAM_SCENARIOS else summary.metric


def _compare(summary: lf.Summary, path: str, values: dict, native, percentile, findings: list) -> None:
    if summary.metric is not None and native is not None:
        tolerance = max(lf.printed_half_unit(summary.metric_text), lf.detail_half_unit(native))
        if abs(summary.metric - native) > tolerance * (1 + 1e-9):
            findings.append(
                finding(
                    "MLI004",
                    path,
                    f"'{summary.metric_label}' differs from the detail log's (beyond either file's printed precision)",
                    line=summary.metric_line,
                    found=summary.metric_text,
                    expected=native,
                )
            )
    stated = isinstance(percentile, (int, float)) and summary.percentile is not None
    if stated and abs(summary.percentile - percentile) > 1e-9:
        findings.append(
            finding(
                "MLI004",
                path,
                "the summary's latency percentile differs from the detail log's effective_target_latency_percentile",
                line=summary.metric_line,
                found=summary.percentile,
                expected=percentile,
            )
        )
    validity = values.get("result_validity")
    if summary.validity is not None and validity is not None and summary.validity != validity:
        findings.append(
            finding(
                "MLI004",
                path,
                "'Result is' differs from the detail log's result_validity",
                line=summary.validity_line,
                found=summary.validity,
                expected=validity,
            )
        )


def _check_validity(result: Result, values: dict, line: int | None, findings: list) -> None:
    validity = values.get("result_validity")
    if validity is None or validity == "VALID":
        return
    reasons = [why for key, why in VALIDITY_FLAGS.items() if values.get(key) is False] or ["no reason logged"]
    findings.append(
        finding(
            "MLI003",
            f"{result.folder}/{RUN}/{DETAIL}",
            f"LoadGen judged the run {validity}: {'; '.join(reasons)}",
            line=line,
            found=validity,
            expected="VALID",
        )
    )


def _check_settings(result: Result, run: Run, rules: dict, findings: list) -> None:
    scenario, values = run.scenario or result.scenario, run.values
    minimums = {
        **rules["scenarios"].get(scenario, {}),
        **rules.get("models", {}).get(result.model, {}).get(scenario, {}),
    }
    for rule, key in SETTINGS.items():
        if rule not in minimums or key not in values:
            continue
        value = values[key]
        number = finite_number(value)
        if not number or value < minimums[rule]:
            requested = values.get(key.replace("effective_", "requested_", 1))
            asked = "" if requested is None else f" (requested {requested})"
            below = "is below" if number else "is not a number, so not at least"
            findings.append(
                finding(
                    "MLI005",
                    f"{result.folder}/{RUN}/{DETAIL}",
                    f"{key} {below} the {rules['ruleset']} minimum for {result.model} {scenario}{asked}",
                    found=value,
                    expected=f">= {minimums[rule]}",
                )
            )


def _check_accuracy(tree: Tree, folder: str, findings: list, *, needs_metric: bool = True) -> dict:
    """accuracy.txt's metrics, hash and text, and whether mlperf_log_accuracy.json is readable."""
    out: dict = {"metrics": {}, "hash": None}
    raw = _file(tree, f"{folder}/{ACCURACY_TXT}", findings)
    if raw is not None:
        out, problems = lf.parse_accuracy_txt(raw, needs_metric=needs_metric)
        out["text"] = decode(raw)[0]
        for lineno, why in problems:
            findings.append(finding("MLI001", f"{folder}/{ACCURACY_TXT}", why, line=lineno or None))
    _check_accuracy_log(tree, f"{folder}/{ACCURACY_LOG}", findings, required=True)
    return out


def _check_accuracy_log(tree: Tree, path: str, findings: list, *, required: bool) -> None:
    raw = _file(tree, path, findings, missing_is_finding=required)
    if raw is not None and (state := lf.accuracy_log_state(raw)) not in ("json", "mlcommons-truncated"):
        findings.append(finding("MLI001", path, state))


def _check_compliance(tree: Tree, result: Result, findings: list, sub: Submission) -> dict:
    """{TEST0x: PASS | FAIL | None} from each compliance test folder's verify_*.txt."""
    verdicts = {}
    for test in sub.listing.get(result.compliance, ([], []))[0]:
        folder = f"{result.compliance}/{test}"
        verify = [f"{folder}/{name}" for name in sub.listing.get(folder, ([], []))[1] if name.startswith("verify_")]
        if not verify:
            findings.append(
                finding("MLI002", f"{folder}/verify_performance.txt", "missing: no verify_*.txt in the test folder")
            )
        judged = []
        for path in verify:
            raw = _file(tree, path, findings)
            verdict, lineno = (None, None) if raw is None else lf.parse_verify(raw)
            if raw is None:
                pass  # MLI001 already: the file changed after the listing
            elif verdict is None:
                findings.append(finding("MLI001", path, "no 'TEST PASS' or 'TEST FAIL' line"))
            elif verdict == "FAIL":
                findings.append(
                    finding("MLI007", path, f"{test} failed", line=lineno, found="TEST FAIL", expected="TEST PASS")
                )
            judged.append(verdict)
        verdicts[test] = "FAIL" if "FAIL" in judged else "PASS" if judged and None not in judged else None
        if f"{folder}/{RUN}" in tree.dirs:
            _check_run(tree, f"{folder}/{RUN}", result.scenario, findings, sub)
        if f"{folder}/accuracy" in tree.dirs:
            _check_accuracy(tree, f"{folder}/accuracy", findings, needs_metric=False)
    return verdicts


def _check_result(tree: Tree, result: Result, rules: dict, sub: Submission) -> tuple[list, dict, official.Read]:
    """The result's findings, its row (the official part still UNSCORED) and what the second pass needs."""
    findings: list[Finding] = []
    run = Run()
    if f"{result.folder}/{RUN}" in tree.dirs:
        run = _check_run(tree, f"{result.folder}/{RUN}", result.scenario, findings, sub)
        _check_validity(result, run.values, run.validity_line, findings)
        _check_settings(result, run, rules, findings)
        _check_accuracy_log(tree, f"{result.folder}/{RUN}/{ACCURACY_LOG}", findings, required=False)
    else:
        findings.append(finding("MLI002", f"{result.folder}/{RUN}", "missing: the scenario has no performance run"))
    accuracy: dict = {"metrics": {}, "hash": None}
    if f"{result.folder}/accuracy" in tree.dirs:
        accuracy = _check_accuracy(tree, f"{result.folder}/accuracy", findings)
        if f"{result.folder}/accuracy/{DETAIL}" in tree.files:  # optional; read for its LoadGen version
            _detail(tree, f"{result.folder}/accuracy/{DETAIL}", findings, sub)
    else:
        findings.append(finding("MLI002", f"{result.folder}/accuracy", "missing: the scenario has no accuracy run"))
    metrics = accuracy["metrics"]
    row = {
        "division": result.division,
        "submitter": result.submitter,
        "system": result.system,
        "model": result.model,
        "scenario": result.scenario,
        "folder": result.folder,
        **official.UNSCORED,  # round, benchmark, field, metric, value, accuracy_judged: the second pass's
        "loadgen_scenario": run.scenario,
        "loadgen_metric": run.metric,
        "loadgen_value": run.value,
        "summary_value": run.summary_value,
        "validity": run.validity,
        "loadgen_version": run.loadgen_version,
        "warnings": run.warnings,
        "accuracy": None if not metrics else {"name": next(iter(metrics)), "value": next(iter(metrics.values()))},
        "accuracy_hash": accuracy["hash"],
        "compliance": _check_compliance(tree, result, findings, sub),
        "errors": {},
    }
    # Of the detail log's values the second pass needs only the keys a round's figure may be (not, e.g., the
    # loaded_qsl_set's thousands of indices): what a judged result keeps in memory is its row and these.
    read = official.Read(
        result.folder, f"{result.folder}/{RUN}/{DETAIL}", run.scenario, official.figure_values(run.values)
    )
    read.logged = bool(run.values)
    read.accuracy_path, read.accuracy_text = f"{result.folder}/accuracy/{ACCURACY_TXT}", accuracy.get("text")
    return findings, row, read


def _mixed_versions(sub: Submission) -> list[Finding]:
    if len(sub.versions) < 2:
        return []

    def where(paths: list[str]) -> str:
        # <system>/<model>/<Scenario> of each log (results/ and compliance/ alike), with its count of logs.
        folders = Counter("/".join(p[len(sub.prefix) :].split("/")[1:4]) for p in paths)
        return ", ".join(f"{folder} ({n} logs)" for folder, n in sorted(folders.items()))

    listed = "; ".join(f"{v}: {where(paths)}" for v, paths in sorted(sub.versions.items()))
    return [
        finding(
            "MLI006",
            sub.prefix.rstrip("/") or ".",
            f"the detail logs name {len(sub.versions)} LoadGen versions: {listed}",
            found=sorted(sub.versions),
        )
    ]


def _systems(tree: Tree, sub: Submission) -> list[Finding]:
    findings = []
    for system in sorted({r.system for r in sub.results}):
        path = f"{sub.prefix}systems/{system}.json"
        if path not in tree.files:
            findings.append(finding("MLI008", path, "missing: the results' system has no description"))
            continue
        raw = _file(tree, path, findings)
        if raw is None:
            continue
        data, error = parse_json(raw)
        if error or not isinstance(data, dict):
            findings.append(finding("MLI008", path, f"not a JSON object: {error or type(data).__name__}"))
    return findings


def check_inference_tree(root: Path, ruleset: str | None = None) -> Report:
    """Findings and scores of an MLCommons Inference tree (see the module docstring); `ruleset` names the round
    (--mlcommons-ruleset: "4.1" or "v4.1"), else the path or the LoadGen versions tell it."""
    tree = read_tree(root, lazy=True)  # listed now, each file read when its result is judged
    try:
        return _check_tree(root, tree, ruleset)
    finally:
        tree.close()


def _check_tree(root: Path, tree: Tree, ruleset: str | None) -> Report:
    submissions = _submissions(Path(root), tree)
    if not any(sub.results for sub in submissions):
        raise UserError(f"{root}: no results/<system>/<model>/<Scenario>/ below a submitter folder")
    rules = load_rules()
    report = Report(str(root), "", sorted(c for c in CODES if c.startswith(CODE_PREFIX)))
    for path, kind in tree.refused:
        report.findings.append(finding("MLI001", path, f"not read: {kind}"))
    if tree.truncated:
        report.findings.append(
            finding("MLI001", ".", "more files than the bounded reader reads: the rest were not checked")
        )
    scores, reads, mappings = [], [], []
    for sub in submissions:
        report.findings.extend(_systems(tree, sub))
        mapping = official.model_mapping(tree, sub.prefix)
        for result in sub.results:
            findings, row, read = _check_result(tree, result, rules, sub)
            report.findings.extend(findings)
            scores.append(row)
            reads.append(read)
            mappings.append(mapping)
        report.findings.extend(_mixed_versions(sub))
    # The second pass: the round may only be known from the LoadGen versions of every detail log.
    versions = sorted({version for sub in submissions for version in sub.versions})
    report.rules_version, rnd, findings = official.the_round(Path(root), ruleset, versions)
    report.findings.extend(findings)
    seen = set()  # a benchmark folder the round does not know is one finding, not one per scenario
    for row, read, mapping in zip(scores, reads, mappings, strict=True):
        for f in official.score(rnd, row, read, mapping):
            if (f.code, f.path, f.message) not in seen:
                seen.add((f.code, f.path, f.message))
                report.findings.append(f)
    report.findings.sort(key=Finding.sort_key)
    for row, errors in zip(scores, official.owned(report.findings, scores)[0], strict=True):
        row["errors"] = errors
    report.scores = scores
    report.layout = INFERENCE
    return report


def unowned_errors(report: Report) -> list[Finding]:
    """The active errors of an Inference report that no result owns (a file at the root, the round, a folder the
    reader refused): they put the whole tree in doubt; a result's own errors leave out only that result."""
    return official.owned(report.findings, report.scores)[1]
