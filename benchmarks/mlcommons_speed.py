"""levelfield on published MLCommons trees against mlperf_logging's own tools on the same files.

    python -m benchmarks mlcommons                        # every submitter folder of the corpus, best of 5
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
`check_inference_tree` is timed alone.
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


FULL = Config(repeats=5)
QUICK = Config(repeats=1)


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
        inference = None
        if INFERENCE.is_dir():
            inference = _best(config.repeats, lambda: check_inference_tree(INFERENCE))
            options.report(f"inference_results_v4.1: levelfield check {inference:.3f} s (no peer installed)")
    return {"ruleset": RULESET, "repeats": config.repeats, "folders": folders, "inference_levelfield_s": inference}


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
    return out
