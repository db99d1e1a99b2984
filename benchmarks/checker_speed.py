"""How fast the submission checker is: per training log against mlperf_logging, and on large trees.

    python -m benchmarks checker                          # 15 logs; trees of 21 .. 2,016 results
    python -m benchmarks checker --quick --out /tmp/bench

(a) Per file, on the 15 training logs of submissions/example:
- levelfield: `check_tree(tree, select=["TRN"])` (every training check) on a
  copy of the example holding only its training side (logs, environments,
  system, code reference; MANIFEST resealed), so no inference file is read;
  best of `repeats` calls after a first, separately reported, call.
- mlperf_logging: its compliance checker in-process (`mlp_compliance.make_checker`
  + `check_file`, as its `__main__` does, one checker per file) with
  levelfield's ruleset rules/1.0/mllog/training.yaml; its log records go to a
  null handler instead of its CLI's file and terminal; best of `repeats` passes.
- Both in fresh child processes, each reporting its import time apart; the
  ratio (the goal) compares the in-process files/s. For reference also the
  command lines as users run them: mlperf_logging's CLI once per file (what
  `levelfield train` does for its peer check, levelfield/harness/compliance.py)
  and `levelfield check --select TRN` once on the 15-log tree, both including
  interpreter start-up (`python -c pass` is reported too).

(b) Trees of growing size (benchmarks/synthetic_tree.py: the example's results
under more system ids), each checked end to end with `check_tree` (every
check, submission profile) in a fresh process, which reports its peak RSS.
The copies are hard links: the checker keeps no cache keyed by a file's
content (the per-line shape cache went with issue 40), so a copy costs what a
different file of the same size costs; `cpu_s` (the child's CPU seconds)
stands beside the wall time, for a machine that is not idle. Two one-time
costs of a process are paid before the clock starts and reported apart:
generating the dataset labels the accuracy re-score needs
(`labels_s`), and a first check_tree on submissions/example itself
(`warmup_s`: the checks' lazy imports and first uses, ~3 s here, plus 21
results' own work); results/s is then the per-result cost. The child also
times check_tree's phases (reading the tree, loading the rules and the
records, the checks by code prefix) by wrapping the engine's functions, so what dominates
is visible. Growth: least-squares fits of time against results (log-log
exponent; and a line: fixed seconds + ms per result).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from benchmarks.child import REPO, run_in_child, status_mib
from benchmarks.options import Options, ratio

TITLE = "checker speed: MLLOG checks per file against mlperf_logging, and check_tree on large trees"
EXAMPLE = REPO / "submissions" / "example"


@dataclass(frozen=True)
class Config:
    """FULL: trees of 1, 6, 24 and 96 system copies (21 .. 2,016 results, ~5 min); QUICK: 1-2 copies."""

    repeats: int  # best-of passes over the 15 logs, per engine
    cli_files: int  # logs given to mlperf_logging's CLI, one process each
    tree_copies: tuple[int, ...]  # sizes of (b), in copies of the example's results


FULL = Config(repeats=5, cli_files=15, tree_copies=(1, 6, 24, 96))
QUICK = Config(repeats=2, cli_files=2, tree_copies=(1, 2))


def run(options: Options, config: Config) -> dict:
    with tempfile.TemporaryDirectory(prefix="levelfield-bench-checker-") as tmp:
        per_file = compare_per_file(Path(tmp) / "training-only", config, options)
        trees = scale(Path(tmp) / "scaled", config, options)
    return {"source": str(EXAMPLE.relative_to(REPO)), "per_file": per_file, "trees": trees}


# -- (a) per file -----------------------------------------------------------------------------------
def compare_per_file(root: Path, config: Config, options: Options) -> dict:
    from benchmarks.synthetic_tree import training_only

    logs = training_only(EXAMPLE, root)
    ours = run_in_child(
        "benchmarks.checker_speed:levelfield_per_file",
        {"root": str(root), "repeats": config.repeats},
        pstats_path=options.child_pstats(),
    )
    peer = run_in_child(
        "benchmarks.checker_speed:mlperf_logging_per_file",
        {"logs": [str(root / p) for p in logs], "repeats": config.repeats},
        pstats_path=options.child_pstats(),
    )
    files = len(logs)
    out = {
        "files": files,
        "levelfield": ours,
        "mlperf_logging": peer,
        "levelfield_files_per_s": files / ours["best_s"],
        "mlperf_logging_files_per_s": files / peer["best_s"],
    }
    out["ratio"] = ratio(out["levelfield_files_per_s"], out["mlperf_logging_files_per_s"])
    out["cli"] = command_lines(root, [root / p for p in logs[: config.cli_files]])
    out["cli"]["ratio"] = ratio(
        files / out["cli"]["levelfield_tree_s"], out["cli"]["mlperf_logging_files"] / out["cli"]["mlperf_logging_s"]
    )
    options.report(format_per_file(out))
    return out


def levelfield_per_file(root: str, repeats: int) -> dict:
    """In a child: import time, first call, and the best of `repeats` check_tree(select TRN) calls."""
    from benchmarks.phase_timer import PhaseTimer  # standard library only

    started = time.perf_counter()
    from levelfield.checker.engine import check_tree

    import_s = time.perf_counter() - started
    started = time.perf_counter()
    report = check_tree(Path(root), select=["TRN"])
    first_call_s = time.perf_counter() - started
    times = []
    with PhaseTimer() as phases:
        for _ in range(repeats):
            started = time.perf_counter()
            check_tree(Path(root), select=["TRN"])
            times.append(time.perf_counter() - started)
    return {
        "import_s": import_s,
        "first_call_s": first_call_s,
        "best_s": min(times),
        "times_s": times,
        "checks_run": len(report.checks_run),
        "findings": len(report.active),
        "phases_mean_s": {name: total / repeats for name, total in phases.totals().items()},
    }


def mlperf_logging_per_file(logs: list[str], repeats: int) -> dict:
    """In a child: import time and the best of `repeats` passes of the peer engine over the logs."""
    started = time.perf_counter()  # first, so no module it shares with levelfield (yaml) is loaded yet
    from mlperf_logging.compliance_checker import mlp_compliance

    import_s = time.perf_counter() - started
    import logging

    from levelfield.harness.compliance import ENGINE_RULESET, ruleset_path
    from levelfield.rules import load_suite

    config = str(ruleset_path(load_suite()).resolve())
    # Its CLI logs at INFO to a file and the terminal; here the records are made and dropped.
    logging.basicConfig(level=logging.INFO, handlers=[logging.NullHandler()], force=True)
    times, passed = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        passed = [
            mlp_compliance.make_checker("training", ENGINE_RULESET, False, False).check_file(log, config)
            for log in logs
        ]
        times.append(time.perf_counter() - started)
    return {
        "import_s": import_s,
        "best_s": min(times),
        "times_s": times,
        "ruleset": ENGINE_RULESET,
        "passed": sum(passed),
        "failed": len(passed) - sum(passed),
    }


def command_lines(root: Path, logs: list[Path]) -> dict:
    """Wall times of the command lines: interpreter start-up, the peer CLI per file, `levelfield check`."""
    from levelfield.harness.compliance import peer_compliance
    from levelfield.rules import load_suite

    suite = load_suite()

    def timed(function):
        started = time.perf_counter()
        value = function()
        return time.perf_counter() - started, value

    startup_s, _ = timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
    peer_s, verdicts = timed(lambda: [peer_compliance(log, suite)[0] for log in logs])
    ours_s, done = timed(
        lambda: subprocess.run(
            [sys.executable, "-m", "levelfield", "check", "--select", "TRN", str(root)],
            capture_output=True,
            text=True,
            cwd=REPO,
            check=False,
        )
    )
    return {
        "python_startup_s": startup_s,
        "mlperf_logging_files": len(logs),
        "mlperf_logging_s": peer_s,
        "mlperf_logging_passed": sum(verdicts),
        "levelfield_tree_s": ours_s,
        "levelfield_exit_code": done.returncode,
    }


# -- (b) large trees --------------------------------------------------------------------------------
def scale(root: Path, config: Config, options: Options) -> dict:
    from benchmarks.synthetic_tree import ScaledTree

    tree = ScaledTree(EXAMPLE, root)
    child_args = {"root": str(root), "tasks": ["ctr-dlrm"], "warmup_root": str(EXAMPLE)}
    sizes = grown_sizes(tree, config.tree_copies, "benchmarks.checker_speed:check_in_child", child_args, options)
    out = {
        "result_unit": "one training log or one inference run folder (performance or accuracy)",
        "results_per_copy": sizes[0]["results"] // sizes[0]["copies"],
        "sizes": sizes,
        **growth(sizes),
    }
    options.report(format_growth(out))
    return out


def grown_sizes(tree, copies_list, target: str, child_args: dict, options: Options, describe=None) -> list[dict]:
    """A synthetic tree (benchmarks/synthetic_tree.py) grown to each of `copies_list` and checked at each size
    by `target` in a fresh process: the child's figures with the tree's counts, its build time and
    results/s; `describe(size)` (default format_size) reported per size."""
    sizes = []
    for copies in copies_list:
        started = time.perf_counter()
        tree.grow(copies)
        build_s = time.perf_counter() - started
        size = run_in_child(target, child_args, pstats_path=options.child_pstats())
        size.update(copies=copies, results=tree.results, files=tree.files, build_s=build_s, hard_links=tree.linked)
        size["results_per_s"] = size["results"] / size["check_s"]
        sizes.append(size)
        options.report((describe or format_size)(size))
    return sizes


def check_in_child(root: str, tasks: list[str], warmup_root: str) -> dict:
    """In a child: check_tree end to end on `root`, with its phases timed, after the process's one-time
    costs: the labels the accuracy re-score needs (`labels_s`) and a first check_tree on `warmup_root`
    (`warmup_s`: the checks' lazy imports and first uses, plus that small tree's own work)."""
    from benchmarks.phase_timer import PhaseTimer
    from levelfield.checker import engine
    from levelfield.checker.context import Context
    from levelfield.rules import load_suite

    started = time.perf_counter()
    for task_id in tasks:
        Context(load_suite()).labels(task_id)
    labels_s = time.perf_counter() - started
    started = time.perf_counter()
    engine.check_tree(Path(warmup_root))
    warmup_s = time.perf_counter() - started
    rss_before_mib = current_rss_mib()
    with PhaseTimer() as phases:
        started, cpu_started = time.perf_counter(), time.process_time()
        report = engine.check_tree(Path(root))
        check_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    phases_s = phases.totals()
    if phases_s:
        phases_s["other"] = check_s - sum(phases_s.values())
    return {
        "check_s": check_s,
        "cpu_s": cpu_s,
        "labels_s": labels_s,
        "warmup_s": warmup_s,
        "rss_before_check_mib": rss_before_mib,
        "findings": len(report.active),
        "finding_codes": sorted({f.code for f in report.active}),
        "phases_s": phases_s,
    }


def current_rss_mib() -> float | None:
    """VmRSS of this process now (Linux), MiB."""
    return status_mib("VmRSS")


def growth(sizes: list[dict]) -> dict:
    """Fits of check time against results: log-log exponent, and fixed seconds + ms per result."""
    import numpy as np

    n = np.array([s["results"] for s in sizes], dtype=float)
    t = np.array([s["check_s"] for s in sizes], dtype=float)
    if len(sizes) < 2:
        return {"exponent": None, "fixed_s": None, "per_result_ms": None, "step_ratios": []}
    exponent = float(np.polyfit(np.log(n), np.log(t), 1)[0])
    per_result_s, fixed_s = (float(v) for v in np.polyfit(n, t, 1))
    # Between consecutive sizes: how much the time grew against how much the tree grew (1.0 = linear).
    steps = [
        {
            "results": [int(a), int(b)],
            "time_ratio": tb / ta,
            "size_ratio": b / a,
            "time_per_size_ratio": (tb / ta) / (b / a),
        }
        for (a, b), (ta, tb) in zip(pairwise(n), pairwise(t), strict=True)
    ]
    return {"exponent": exponent, "fixed_s": fixed_s, "per_result_ms": 1000 * per_result_s, "step_ratios": steps}


# -- output -----------------------------------------------------------------------------------------
def format_per_file(r: dict) -> str:
    ours, peer, cli = r["levelfield"], r["mlperf_logging"], r["cli"]
    return (
        f"per file ({r['files']} training logs): levelfield TRN checks {r['levelfield_files_per_s']:,.1f} files/s "
        f"(import {ours['import_s']:.2f} s, first call {ours['first_call_s']:.2f} s), mlperf_logging "
        f"{r['mlperf_logging_files_per_s']:,.1f} files/s (import {peer['import_s']:.2f} s): x{r['ratio']:.2f}; "
        f"command lines: levelfield check {cli['levelfield_tree_s']:.2f} s for {r['files']} logs, "
        f"mlperf_logging {cli['mlperf_logging_s'] / cli['mlperf_logging_files']:.2f} s per log, "
        f"python start-up {cli['python_startup_s']:.2f} s"
    )


def format_size(s: dict) -> str:
    return (
        f"tree of {s['results']:,} results ({s['files']:,} files): check_tree {s['check_s']:.2f} s "
        f"({s.get('cpu_s', float('nan')):.2f} s CPU) = "
        f"{s['results_per_s']:,.1f} results/s, peak RSS {s['peak_rss_mib']:,.0f} MiB, {s['findings']} findings "
        f"(apart: labels {s['labels_s']:.2f} s, first check_tree {s['warmup_s']:.2f} s); slowest phases: "
        f"{_phases(s['phases_s'], 4)}"
    )


def format_growth(g: dict) -> str:
    if g["exponent"] is None:
        return "growth: one size only"
    return (
        f"growth: time ~ results^{g['exponent']:.2f}; line fit {g['fixed_s']:.2f} s + "
        f"{g['per_result_ms']:.2f} ms per result"
    )


def _phases(phases_s: dict, top: int = 3) -> str:
    """The `top` slowest phases, "name 0.12 s, ..."."""
    slowest = sorted(phases_s.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{name} {seconds:.3f} s" for name, seconds in slowest) or "no breakdown"


def rows(result: dict) -> list[dict]:
    r, trees = result["per_file"], result["trees"]
    out = [
        {
            "compared": f"MLLOG checks, {r['files']} training logs, in-process: levelfield check_tree(select TRN) vs "
            f"mlperf_logging compliance checker (ruleset {r['mlperf_logging']['ruleset']})",
            "figures": f"{r['levelfield_files_per_s']:,.1f} vs {r['mlperf_logging_files_per_s']:,.1f} files/s; "
            f"imports {r['levelfield']['import_s']:.2f} vs {r['mlperf_logging']['import_s']:.2f} s; "
            f"levelfield per call: {_phases(r['levelfield'].get('phases_mean_s', {}))}",
            "ratio": r["ratio"],
            "goal": "checker_speedup_per_file",
            "value": r["ratio"],
        },
        {
            "compared": "the same as command lines: `levelfield check --select TRN` on the logs' tree vs "
            "mlperf_logging's CLI once per log (start-up included)",
            "figures": f"{r['cli']['levelfield_tree_s']:.2f} s for {r['files']} logs vs "
            f"{r['cli']['mlperf_logging_s'] / r['cli']['mlperf_logging_files']:.2f} s per log; "
            f"`python -c pass` {r['cli']['python_startup_s']:.2f} s",
            "ratio": r["cli"]["ratio"],
            "goal": None,
            "value": None,
        },
    ]
    largest = max(s["results"] for s in trees["sizes"])
    for s in trees["sizes"]:
        out.append(
            {
                "compared": f"check_tree end to end, {s['results']:,} results ({s['files']:,} files)",
                "figures": f"{s['check_s']:.2f} s, peak RSS {s['peak_rss_mib']:,.0f} MiB, {s['findings']} "
                f"findings; slowest phases {_phases(s['phases_s'], 2)}; apart: labels "
                f"{s['labels_s']:.2f} s, the process's first check_tree {s['warmup_s']:.2f} s",
                "ratio": s["results_per_s"],
                "ratio_text": f"{s['results_per_s']:,.1f} results/s",
                "goal": "checker_results_per_s" if s["results"] == largest else None,
                "value": s["results_per_s"] if s["results"] == largest else None,
            }
        )
    if trees["exponent"] is not None:
        out.append(
            {
                "compared": f"growth of check_tree time over {len(trees['sizes'])} sizes",
                "figures": f"line fit {trees['fixed_s']:.2f} s + {trees['per_result_ms']:.2f} ms per result",
                "ratio": trees["exponent"],
                "ratio_text": f"exponent {trees['exponent']:.2f}",
                "goal": "checker_growth_exponent",
                "value": trees["exponent"],
            }
        )
    return out
