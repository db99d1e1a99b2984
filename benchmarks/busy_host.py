"""Predict throughput on a busy host, per framework: alone, beside CPU-bound processes, beside a copy of itself.

    python -m benchmarks busy_host                                   # three frameworks, ~5 min on this CPU
    python -m benchmarks busy_host --frameworks pytorch --quick --out /tmp/bench

Why: a result must be valid on any machine and a comparison fair on any machine, and a vendor's host is
not always idle. The frameworks' CPU thread pools wait for work differently: PyTorch's OpenMP threads
(libgomp) spin for a while before they sleep, TensorFlow's Eigen pool and XLA's (JAX) spin less. On an
idle host spinning saves the wake-up; on a busy one spinning threads take the cores from the threads
that have work, most of all from another spinning pool. This measures what that costs each framework.

Each condition runs the same loop in a fresh child process (an OpenMP policy applies at import): ctr-dlrm
predict at batch 256 on its eval rows (the runner's hot path), samples/s in WINDOW_S windows after a warm-up.

- **alone**: nothing else runs (the benchmark's own parent waits);
- **beside busy loops**: one pure-Python loop per core: other work that computes and never spin-waits;
- **beside a copy**: the same predict loop of the same framework in a second process (two pools);

and, for PyTorch, each of them again with OMP_WAIT_POLICY=PASSIVE (its threads sleep as soon as they
are idle), the switch a user of a shared host would reach for.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.child import REPO, run_in_child
from benchmarks.options import Options

TITLE = "busy host: predict samples/s alone, beside CPU-bound processes and beside a copy of itself (ctr-dlrm)"
TASK = "ctr-dlrm"
BATCH = 256
CONDITIONS = ("alone", "busy_loops", "copy")
PASSIVE = {"OMP_WAIT_POLICY": "PASSIVE"}  # PyTorch's variant: libgomp's threads sleep at once when idle
READY_TIMEOUT_S = 300  # a competing copy imports its framework and compiles before it is ready


@dataclass(frozen=True)
class Config:
    windows: int  # timed windows per condition
    window_s: float  # length of each
    warmup_calls: int  # untimed predicts first (compilation, pools started)


FULL = Config(windows=5, window_s=2.0, warmup_calls=20)
QUICK = Config(windows=2, window_s=0.2, warmup_calls=3)


def _predictor(framework: str):
    """The compiled implementation's predict, loaded with seed-0 weights, and one batch of eval rows."""
    from levelfield.ground.registry import load_implementation
    from levelfield.reference.ctr_dlrm.common.model_spec import init_weights
    from levelfield.reference.datasets import generate_arrays
    from levelfield.reference.interface import Recipe
    from levelfield.rules import load_suite

    task = load_suite().task(TASK)
    arrays = generate_arrays(task)
    impl = load_implementation(TASK, framework)(Recipe.from_task(task))
    impl.load(init_weights(0))
    rows = {"dense": arrays["eval_dense"][:BATCH], "sparse": arrays["eval_sparse"][:BATCH]}
    return impl, rows


def measure(framework: str, config: dict) -> dict:
    """In the child: samples/s of the predict loop in each window."""
    c = Config(**config)
    impl, rows = _predictor(framework)
    for _ in range(c.warmup_calls):
        impl.predict(rows)
    rates = []
    for _ in range(c.windows):
        started, samples = time.perf_counter(), 0
        while time.perf_counter() - started < c.window_s:
            impl.predict(rows)
            samples += BATCH
        rates.append(samples / (time.perf_counter() - started))
    return {"framework_version": impl.version(), "samples_per_s": rates, "load_average": os.getloadavg()}


def compete(framework: str, ready_path: str) -> None:
    """A competing copy: the same predict loop until killed; `ready_path` is written once it is warm."""
    impl, rows = _predictor(framework)
    for _ in range(20):
        impl.predict(rows)
    Path(ready_path).write_text("ready")
    while True:
        impl.predict(rows)


def _start_competitors(condition: str, framework: str, env: dict, scratch: Path) -> list[subprocess.Popen]:
    """The processes a condition runs beside the measured child, started and warm."""
    if condition == "alone":
        return []
    if condition == "busy_loops":
        spin = "while True:\n    pass"
        return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(os.cpu_count() or 1)]
    ready = scratch / f"ready-{framework}-{time.monotonic_ns()}"
    code = f"from benchmarks.busy_host import compete; compete({framework!r}, {str(ready)!r})"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, **env})
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the competing {framework} copy did not get ready (exit {proc.poll()})")
        time.sleep(0.2)
    return [proc]


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


def variants(framework: str) -> dict[str, dict]:
    """The environments a framework is measured in: its default, and for PyTorch the passive wait policy."""
    return {"default": {}, "omp_passive": PASSIVE} if framework == "pytorch" else {"default": {}}


def run(options: Options, config: Config) -> dict:
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="levelfield-busy-host-") as scratch:
        for framework in options.real_frameworks():
            for variant, env in variants(framework).items():
                entry: dict = {"env": env}
                for condition in CONDITIONS:
                    competitors = _start_competitors(condition, framework, env, Path(scratch))
                    try:
                        measured = run_in_child(
                            "benchmarks.busy_host:measure",
                            {"framework": framework, "config": config.__dict__},
                            env=env,
                            pstats_path=options.child_pstats(),
                        )
                    finally:
                        _stop(competitors)
                    measured["median_samples_per_s"] = statistics.median(measured["samples_per_s"])
                    entry[condition] = measured
                    options.report(
                        f"{framework:10s} {variant:11s} {condition:10s} "
                        f"{measured['median_samples_per_s']:>12,.0f} samples/s {_range(measured['samples_per_s'])}"
                    )
                entry["framework_version"] = entry["alone"]["framework_version"]
                results.setdefault(framework, {})[variant] = entry
    return {"task": TASK, "batch": BATCH, "cpus": os.cpu_count(), "frameworks": results}


def _range(values: list[float]) -> str:
    return f"[{min(values):,.0f}-{max(values):,.0f}]"


def rows(result: dict) -> list[dict]:
    out = []
    for framework, by_variant in result["frameworks"].items():
        for variant, e in by_variant.items():
            alone = e["alone"]["median_samples_per_s"]
            for condition in CONDITIONS[1:]:
                busy = e[condition]["median_samples_per_s"]
                out.append(
                    {
                        "compared": f"{framework} ({variant}): predict samples/s {condition.replace('_', ' ')} "
                        "vs alone",
                        "figures": f"{busy:,.0f} {_range(e[condition]['samples_per_s'])} vs {alone:,.0f} "
                        f"{_range(e['alone']['samples_per_s'])}",
                        "ratio": busy / alone,
                        "goal": None,
                        "value": busy / alone,
                    }
                )
    return out
