"""levelfield on published MLCommons trees against mlperf_logging's own tools on the same files.

    python -m benchmarks mlcommons                        # every submitter folder of the corpus, best of 5;
                                                          # Inference rounds of 100 .. 4,000 results
    python -m benchmarks mlcommons --quick --out /tmp/bench

The corpus is ../shared/mlperf-corpus (published MLPerf files; see its README);
without it the benchmark reports that it did not run. Per Training submitter
folder, both in this process, on temporary copies (the summarizer writes
scaling.json into what it reads), best of `repeats` after one untimed pass:

- levelfield: `check_training_tree` (its own robust reading, mlperf_logging's
  compliance, RCP and system-description engines on copies, the score);
- mlperf_logging: `result_summarizer.summarize_results(folder, "training",
  ruleset)` (its compliance checker per log, its RCP checker, the score).

Both apply the same peer engines, so levelfield cannot be much faster here:
the ratio says what its own reading, its findings and its copies cost on
top. Per log, levelfield's reader alone (`parse_mllog`) is timed against the
peer's parser (`mlp_parser.parse_file`). MLCommons Inference trees have no
peer in mlperf_logging (MLCommons' inference submission checker lives in the
inference repository, not installed here): levelfield's
`check_inference_tree` is timed alone, on the corpus (best of `repeats`) and
on whole rounds: the corpus's submitter folders copied under new submitter
names until the tree holds hundreds to thousands of results
(benchmarks/synthetic_tree.py InferenceRound, hard links), each checked end to
end in a fresh process that reports its peak RSS, its RSS before the check
(after the imports and a first check of the corpus), the wall and CPU seconds
and results/s. How peak RSS grows with the number of results (MiB per 1,000
results, a least-squares line) is what says the memory is bounded: a result's
files are read and dropped as it is judged, and only its row and findings stay.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.child import REPO
from benchmarks.options import Options, ratio

TITLE = "MLCommons trees: levelfield check against mlperf_logging's result summarizer, per submitter folder"
CORPUS = REPO.parent / "shared" / "mlperf-corpus"
TRAINING = CORPUS / "training_results_v4.0"
INFERENCE = CORPUS / "inference_results_v4.1"
RULESET = "4.0.0"


@dataclass(frozen=True)
class Config:
    repeats: int  # best-of passes per engine and folder
    round_copies: tuple[int, ...]  # Inference rounds: copies of each corpus submitter folder (5 results a copy)


FULL = Config(repeats=5, round_copies=(20, 200, 800))  # 100, 1,000 and 4,000 results
QUICK = Config(repeats=1, round_copies=(1, 2))


def _best(repeats: int, call) -> float:
    call()  # untimed: first imports, first reads of the peer's YAML rules
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times)


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the corpus is read-only
    return target


def run(options: Options, config: Config) -> dict:
    if not TRAINING.is_dir():
        options.report(f"mlcommons: {CORPUS} is absent; not run")
        return {"skipped": f"{CORPUS} absent", "folders": {}}
    from mlperf_logging.compliance_checker.mlp_parser import parse_file
    from mlperf_logging.result_summarizer.result_summarizer import summarize_results

    from levelfield.checker.mlcommons.inference import check_inference_tree
    from levelfield.checker.mlcommons.peer import captured_logging
    from levelfield.checker.mlcommons.training import check_training_tree
    from levelfield.ground.parse import parse_mllog

    folders = {}
    with tempfile.TemporaryDirectory(prefix="levelfield-bench-mlcommons-") as tmp:
        for submitter in sorted(p.name for p in TRAINING.iterdir()):
            folder = _copy(TRAINING / submitter, Path(tmp) / "training_results_v4.0" / submitter)
            logs = sorted(folder.glob("results/*/*/result_*.txt"))
            ours = _best(config.repeats, lambda f=folder: check_training_tree(f, RULESET))
            # The summarizer prints its tables and logs what its checkers say: both kept off the terminal.
            with contextlib.redirect_stdout(io.StringIO()), captured_logging():
                peer = _best(config.repeats, lambda f=folder: summarize_results(str(f), "training", RULESET))
            read_ours = _best(
                config.repeats,
                lambda logs=logs: [parse_mllog(p.read_bytes(), str(p), read_interleaved=True) for p in logs],
            )
            read_peer = _best(config.repeats, lambda logs=logs: [parse_file(str(p), ruleset=RULESET) for p in logs])
            folders[submitter] = {
                "logs": len(logs),
                "levelfield_s": ours,
                "mlperf_logging_s": peer,
                "speedup": ratio(peer, ours),
                "read_levelfield_s": read_ours,
                "read_mlperf_logging_s": read_peer,
                "read_speedup": ratio(read_peer, read_ours),
            }
            options.report(
                f"{submitter:18s} {len(logs):3d} logs: levelfield check {ours:.3f} s, result_summarizer {peer:.3f} s "
                f"({folders[submitter]['speedup']:.2f}x); reading alone {read_ours * 1000:.1f} ms vs "
                f"{read_peer * 1000:.1f} ms"
            )
        inference, rounds = None, None
        if INFERENCE.is_dir():
            inference = _best(config.repeats, lambda: check_inference_tree(INFERENCE))
            options.report(f"inference_results_v4.1: levelfield check {inference:.3f} s (no peer installed)")
            rounds = inference_rounds(Path(tmp) / "rounds" / INFERENCE.name, config, options)
    return {
        "ruleset": RULESET,
        "repeats": config.repeats,
        "folders": folders,
        "inference_levelfield_s": inference,
        "inference_rounds": rounds,
    }


# -- whole Inference rounds ---------------------------------------------------------------------------
def inference_rounds(root: Path, config: Config, options: Options) -> dict:
    """check_inference_tree on rounds of growing size built from the corpus, each in a fresh process."""
    from benchmarks.checker_speed import grown_sizes
    from benchmarks.synthetic_tree import InferenceRound

    tree = InferenceRound(INFERENCE, root)
    child_args = {"root": str(root), "warmup_root": str(INFERENCE)}
    target = "benchmarks.mlcommons_speed:check_round_in_child"
    sizes = grown_sizes(tree, config.round_copies, target, child_args, options, _describe_round)
    out = {"source": str(INFERENCE), "sizes": sizes, **_rss_growth(sizes)}
    if out["rss_per_1000_results_mib"] is not None:
        options.report(f"Inference rounds: peak RSS grows {out['rss_per_1000_results_mib']:.1f} MiB per 1,000 results")
    return out


def _describe_round(size: dict) -> str:
    return (
        f"Inference round of {size['results']:,} results ({size['files']:,} files): check {size['check_s']:.2f} s "
        f"({size['cpu_s']:.2f} s CPU) = {size['results_per_s']:,.1f} results/s, peak RSS "
        f"{size['peak_rss_mib']:,.0f} MiB ({size['rss_before_check_mib']:,.0f} MiB before the check)"
    )


def check_round_in_child(root: str, warmup_root: str) -> dict:
    """In a child: check_inference_tree on `root` after a first check of `warmup_root` (imports, rules)."""
    from benchmarks.checker_speed import current_rss_mib
    from levelfield.checker.mlcommons.inference import check_inference_tree

    started = time.perf_counter()
    check_inference_tree(Path(warmup_root))
    warmup_s = time.perf_counter() - started
    rss_before = current_rss_mib()
    started, cpu_started = time.perf_counter(), time.process_time()
    report = check_inference_tree(Path(root))
    check_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    return {
        "check_s": check_s,
        "cpu_s": cpu_s,
        "warmup_s": warmup_s,
        "rss_before_check_mib": rss_before,
        "rss_after_check_mib": current_rss_mib(),
        "rows": len(report.scores),
        "scored": sum(row["value"] is not None for row in report.scores),
        "findings": len(report.active),
        "finding_codes": sorted({f.code for f in report.active}),
        "rules_version": report.rules_version,
    }


def _rss_growth(sizes: list[dict]) -> dict:
    """Peak RSS against results: a least-squares line's slope (MiB per 1,000 results) and intercept."""
    import numpy as np

    if len(sizes) < 2:
        return {"rss_per_1000_results_mib": None, "rss_fixed_mib": None}
    n = np.array([s["results"] for s in sizes], dtype=float)
    rss = np.array([s["peak_rss_mib"] for s in sizes], dtype=float)
    slope, fixed = (float(v) for v in np.polyfit(n, rss, 1))
    return {"rss_per_1000_results_mib": 1000 * slope, "rss_fixed_mib": fixed}


def rows(result: dict) -> list[dict]:
    if "skipped" in result:
        return [
            {"compared": "MLCommons corpus", "figures": result["skipped"], "ratio": None, "goal": None, "value": None}
        ]
    out = [
        {
            "compared": f"training_results_v4.0/{name} ({e['logs']} logs): levelfield check vs result_summarizer",
            "figures": f"{e['levelfield_s']:.3f} s vs {e['mlperf_logging_s']:.3f} s; reading the logs alone "
            f"{1000 * e['read_levelfield_s']:.1f} ms vs {1000 * e['read_mlperf_logging_s']:.1f} ms "
            f"({e['read_speedup']:.2f}x)",
            "ratio": e["speedup"],
            "goal": None,
            "value": e["speedup"],
        }
        for name, e in result["folders"].items()
    ]
    if result.get("inference_levelfield_s") is not None:
        out.append(
            {
                "compared": "inference_results_v4.1: levelfield check (no peer installed)",
                "figures": f"{result['inference_levelfield_s']:.3f} s",
                "ratio": None,
                "goal": None,
                "value": None,
            }
        )
    rounds = result.get("inference_rounds") or {"sizes": []}
    for s in rounds["sizes"]:
        out.append(
            {
                "compared": f"an Inference round of {s['results']:,} results ({s['files']:,} files, {s['copies']} "
                "copies of the corpus's submitters): check_inference_tree end to end, in a fresh process",
                "figures": f"{s['check_s']:.2f} s ({s['cpu_s']:.2f} s CPU), peak RSS {s['peak_rss_mib']:,.0f} MiB "
                f"({s['rss_before_check_mib']:,.0f} MiB before the check), {s['rows']:,} rows, "
                f"{s['findings']} findings",
                "ratio": s["results_per_s"],
                "ratio_text": f"{s['results_per_s']:,.1f} results/s",
                "goal": None,
                "value": None,
            }
        )
    if rounds.get("rss_per_1000_results_mib") is not None:
        out.append(
            {
                "compared": f"peak RSS of the Inference rounds against their results ({len(rounds['sizes'])} sizes)",
                "figures": f"line fit {rounds['rss_fixed_mib']:.0f} MiB + "
                f"{rounds['rss_per_1000_results_mib']:.1f} MiB per 1,000 results",
                "ratio": rounds["rss_per_1000_results_mib"],
                "ratio_text": f"{rounds['rss_per_1000_results_mib']:.1f} MiB per 1,000 results",
                "goal": "mlcommons_round_rss_per_1000_results_mib",
                "value": rounds["rss_per_1000_results_mib"],
            }
        )
    return out
