"""MLCommons Training trees: every log read robustly, checked by mlperf_logging's rules, scored as MLCommons scores.

    report = check_training_tree(Path("training_results_v4.0"), ruleset="4.0.0")
    report.findings                  # MLT001-MLT008, each with file and line
    report.scores                    # one row per (submitter, system, benchmark): score_min and its parts

Layout: `<submitter>/results/<system>/<benchmark>/result_<i>.txt` (and the
review's `scaling.json`), `<submitter>/systems/<system>.json`. The root is a
submitter folder or a folder of them. Files are read once, through the
checker's bounded reader (no link followed, sizes capped).

The score is the result summarizer's (mlperf_logging.result_summarizer,
strong scaling) computed afresh: a run counts when mlperf_logging's
compliance checker accepts its log, its minutes are run_stop - run_start;
failed runs are dropped first, then the olympic average drops
`max_dropped` scores from the fast end and what remains of them from the
slow end; the average is multiplied by scaling.json's factor when the folder
holds one (the review committee's RCP scaling). tests/test_mlcommons_training.py
runs the peer on every submitter folder of the published corpus and compares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from levelfield.checker.engine import Report
from levelfield.checker.findings import Finding
from levelfield.checker.mlcommons import peer
from levelfield.checker.mlcommons.codes import CODES, finding
from levelfield.checker.mlcommons.layout import TRAINING, training_submitters
from levelfield.ground.errors import UserError
from levelfield.ground.parse import MllogFile, parse_json, parse_mllog
from levelfield.ground.submission.tree import read_tree
from levelfield.ground.training_log import run_status

RESULT_FILE = re.compile(r"^result_(\d+)\.txt$")
SCALING_FILE = "scaling.json"
MS_PER_MIN = 60_000
# Scores the olympic average may drop (mlperf_logging.result_summarizer 4.1: 4 for unet3d's 40 runs,
# 1 for every other benchmark); failed runs are dropped first, from these.
MAX_DROPPED = {"unet3d": 4}
DEFAULT_MAX_DROPPED = 1
# The result summarizer's folder alias.
BENCHMARK_ALIAS = {"mask": "maskrcnn"}
RULESET_IN_PATH = re.compile(r"training_results_v(\d+)\.(\d+)")


@dataclass
class Benchmark:
    submitter: str
    system: str
    benchmark: str
    folder: str  # relative to the root
    logs: dict[str, bytes] = field(default_factory=dict)  # result_<i>.txt -> bytes
    scaling: bytes | None = None


def ruleset_for(root: Path, ruleset: str | None) -> str:
    """The MLCommons training ruleset: the one asked for, else the `training_results_vX.Y` folder the tree
    lies in (MLCommons' own naming; the logs do not record their ruleset)."""
    known = peer.supported_rulesets()
    if ruleset is None:
        match = next((m for part in root.resolve().parts if (m := RULESET_IN_PATH.fullmatch(part))), None)
        if match is None:
            raise UserError(
                f"{root}: the MLCommons ruleset is not named (the logs do not record it, and no folder of the path "
                "is named training_results_vX.Y)",
                hint=f"pass --mlcommons-ruleset, one of {', '.join(known)}",
            )
        ruleset = f"{match.group(1)}.{match.group(2)}.0"
    if ruleset not in known:
        raise UserError(
            f"--mlcommons-ruleset {ruleset}: not one mlperf_logging knows (expected one of {', '.join(known)})"
        )
    return ruleset


def _benchmarks(root: Path, tree) -> tuple[list[Benchmark], dict[tuple[str, str], str]]:
    """The tree's benchmark folders and {(submitter, system): systems/<system>.json path}."""
    bases = {p.resolve().relative_to(root.resolve()).as_posix() for p in training_submitters(root)}
    found: dict[tuple, Benchmark] = {}
    systems = {}
    for path, file in sorted(tree.files.items()):
        parts = path.split("/")
        base = next((b for b in bases if b == "." or path.startswith(b + "/")), None)
        if base is None:
            continue
        rel = parts if base == "." else parts[len(base.split("/")) :]
        submitter = Path(root).resolve().name if base == "." else base
        if len(rel) == 2 and rel[0] == "systems" and rel[1].endswith(".json"):
            systems[(submitter, rel[1][: -len(".json")])] = path
        elif len(rel) == 4 and rel[0] == "results" and (RESULT_FILE.match(rel[3]) or rel[3] == SCALING_FILE):
            key = (submitter, rel[1], rel[2])
            folder = path.rsplit("/", 1)[0]
            bench = found.setdefault(key, Benchmark(submitter, rel[1], BENCHMARK_ALIAS.get(rel[2], rel[2]), folder))
            if rel[3] == SCALING_FILE:
                bench.scaling = file.data
            else:
                bench.logs[rel[3]] = file.data
    return [found[k] for k in sorted(found)], systems


def olympic_average(scores: list[float], dropped: int, max_dropped: int) -> float | None:
    """The result summarizer's olympic average: `dropped` failed runs are already out (they count as the
    slowest), so max_dropped scores go from the fast end and max_dropped - dropped from the slow end."""
    scores = sorted(scores)
    countable = scores[max_dropped : len(scores) - (max_dropped - dropped)]
    if not countable:
        return None
    return sum(countable) * 1.0 / len(countable)


def _run_minutes(log: MllogFile) -> float | None:
    """run_stop - run_start in minutes, from the first of each (the result summarizer's reading)."""
    start, stop = log.first("run_start"), log.first("run_stop")
    if start is None or stop is None or start.time_ms is None or stop.time_ms is None:
        return None
    return (stop.time_ms - start.time_ms) / MS_PER_MIN


def _check_benchmark(bench: Benchmark, ruleset: str, division: str | None) -> tuple[list, dict]:
    findings, minutes = [], []
    failed = 0
    costly = {name for name, data in bench.logs.items() if peer.too_costly(data)}  # never handed to the peer
    with peer.materialized(bench.logs) as folder:
        for name in sorted(bench.logs, key=lambda n: int(RESULT_FILE.match(n).group(1))):
            path = f"{bench.folder}/{name}"
            log = parse_mllog(bench.logs[name], path, read_interleaved=True)
            for lineno, why in log.errors:
                findings.append(finding("MLT001", path, f"not a readable MLLOG line: {why}", line=lineno or None))
            for lineno in log.interleaved:
                findings.append(
                    finding("MLT002", path, "another process's output precedes :::MLLOG on this line", line=lineno)
                )
            status = run_status(log)
            if status != "success":
                stop = log.last("run_stop")
                findings.append(
                    finding(
                        "MLT003",
                        path,
                        "the run's log says it did not succeed",
                        line=None if stop is None else stop.lineno,
                        found=status or "no run_stop",
                        expected="success",
                    )
                )
            if name in costly:
                cost = "lines too long for mlperf_logging's parser to read in bounded time (its line regex is "
                findings.append(finding("MLT001", path, cost + "quadratic in their length); not handed to it"))
                failed += 1
                continue
            messages = peer.compliance_messages(folder / name, ruleset)
            for message in messages:
                findings.append(finding("MLT004", path, f"mlperf_logging {ruleset}: {message}"))
            run = _run_minutes(log)
            if messages or log.errors or run is None:
                failed += 1
            else:
                minutes.append(run)
        rcp = peer.rcp_verdict(folder, ruleset) if division == "closed" and not costly else None
    max_dropped = MAX_DROPPED.get(bench.benchmark, DEFAULT_MAX_DROPPED)
    scaling, scaling_error = _scaling_factor(bench)
    if scaling_error:
        findings.append(finding("MLT001", f"{bench.folder}/{SCALING_FILE}", f"not readable: {scaling_error}"))
    required = _required_runs(bench.benchmark)
    score = None
    if failed > max_dropped:
        findings.append(
            finding(
                "MLT006",
                bench.folder,
                f"{failed} of {len(bench.logs)} runs failed; the olympic scoring drops at most {max_dropped}",
                found=failed,
                expected=f"<= {max_dropped}",
            )
        )
    else:
        average = olympic_average(minutes, failed, max_dropped)
        score = None if average is None else average * scaling
    if required is not None and len(bench.logs) < required:
        findings.append(
            finding(
                "MLT006",
                bench.folder,
                f"{len(bench.logs)} result files; {bench.benchmark} requires {required}",
                found=len(bench.logs),
                expected=required,
            )
        )
    if rcp is not None:
        passed, message, norm = rcp
        if not passed:
            findings.append(finding("MLT005", bench.folder, f"mlperf_logging {ruleset} RCP check: {message}"))
        elif bench.scaling is not None and not scaling_error and abs(scaling - norm) > 1e-9:
            findings.append(
                finding(
                    "MLT008",
                    f"{bench.folder}/{SCALING_FILE}",
                    "scaling factor differs from the RCP check's",
                    found=scaling,
                    expected=norm,
                )
            )
    row = {
        "submitter": bench.submitter,
        "system": bench.system,
        "benchmark": bench.benchmark,
        "division": division,
        "runs": len(bench.logs),
        "failed_runs": failed,
        "run_minutes": sorted(minutes),
        "scaling_factor": scaling,
        "rcp": None if rcp is None else {"passed": rcp[0], "message": rcp[1], "normalization": rcp[2]},
        "score_min": score,
    }
    return findings, row


def _scaling_factor(bench: Benchmark) -> tuple[float, str | None]:
    if bench.scaling is None:
        return 1.0, None
    data, error = parse_json(bench.scaling)
    if error:
        return 1.0, error
    factor = data.get("scaling_factor") if isinstance(data, dict) else None
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        return 1.0, f'expected {{"scaling_factor": <number>}}, found {str(data)[:80]}'
    return float(factor), None


def _required_runs(benchmark: str) -> int | None:
    from mlperf_logging.benchmark_meta import get_result_file_counts

    return get_result_file_counts(peer.USAGE).get(benchmark)


def _system(tree, systems: dict, submitter: str, system: str, ruleset: str) -> tuple[dict | None, list]:
    path = systems.get((submitter, system))
    if path is None:
        where = f"{submitter}/systems/{system}.json"
        return None, [finding("MLT007", where, "missing: the results' system has no description")]
    data, error = parse_json(tree.files[path].data)
    if error or not isinstance(data, dict):
        return None, [finding("MLT007", path, f"not a JSON object: {error or type(data).__name__}")]
    with peer.materialized({"system.json": tree.files[path].data}) as folder:
        problems = peer.system_description_problems(folder / "system.json", ruleset)
    return data, [finding("MLT009", path, f"mlperf_logging {ruleset}: {p}") for p in problems]


def check_training_tree(root: Path, ruleset: str | None = None) -> Report:
    """Findings and scores of an MLCommons Training tree (see the module docstring)."""
    ruleset = ruleset_for(root, ruleset)
    tree = read_tree(root)
    benchmarks, systems = _benchmarks(root, tree)
    if not benchmarks:
        raise UserError(f"{root}: no results/<system>/<benchmark>/result_<i>.txt below a submitter folder")
    report = Report(str(root), f"MLCommons training {ruleset}", sorted(c for c in CODES if c.startswith("MLT")))
    described: dict[tuple, dict | None] = {}
    scores = []
    for bench in benchmarks:
        key = (bench.submitter, bench.system)
        if key not in described:
            described[key], problems = _system(tree, systems, *key, ruleset)
            report.findings.extend(problems)
        desc = described[key] or {}
        findings, row = _check_benchmark(bench, ruleset, desc.get("division"))
        report.findings.extend(findings)
        scores.append({**row, "system_name": desc.get("system_name"), "status": desc.get("status")})
    report.findings.sort(key=Finding.sort_key)
    report.scores = scores
    report.layout = TRAINING
    return report
