"""Batch latency per task and framework: the measurement behind each task's Server latency bound.

    python -m benchmarks batch_latency                       # three tasks x three frameworks
    python -m benchmarks batch_latency --tasks fmnist-resnet --frameworks jax --quick --out /tmp/bench

Each task x framework runs in a fresh process (benchmarks/child.py): the
compiled implementation loads the seed-0 weights and times the SUT's own work
(gather eval rows, predict, response rows) at batch sizes 1, 2, 4, ... up to
the task's largest predict batch, on one thread (load, warm-up and timing on
the same thread, as the runner does: sizing.py's `time_calls`, median and p90
of at least 3 calls after an untimed first one).

The rules derive each task's Server bound from these figures (rules/1.0/tasks/
<task>.yaml, `scenarios.server`): twice the slowest framework's median latency
for a batch of BOUND_BATCH samples, rounded up to 10 ms, at least 10 ms. Twice,
because a sample that arrives while a batch runs waits for it and then for its
own; BOUND_BATCH, because from that size on every task's per-sample cost on this
CPU is near its best, so a batcher held to the bound can serve about what
Offline does. MLPerf likewise sets its Server bounds as a multiple of the model's
latency on reference hardware. `rows` prints the bound this run implies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from benchmarks.child import run_in_child
from benchmarks.options import Options

TITLE = "batch latency: the SUT's predict + response rows per batch size, per task and framework (Server bounds)"
DEFAULT_TASKS = ("fmnist-resnet", "seq-transformer", "ctr-dlrm")
BOUND_BATCH = 128  # the batch size a Server bound must leave room for (module docstring)
BOUND_STEP_MS = 10  # bounds are rounded up to a multiple of this
BOUND_FLOOR_MS = 10  # ... and never below it: Python's GIL switch interval is 5 ms


@dataclass(frozen=True)
class Config:
    largest_batch: int | None  # None: the task's MAX_PREDICT_BATCH


FULL = Config(largest_batch=None)
QUICK = Config(largest_batch=8)


def measure(task_id: str, framework: str, largest_batch: int | None) -> dict:
    """In the child: {"framework_version", "costs": [BatchCost as dict, ...]} on one worker thread."""
    import threading
    from dataclasses import asdict

    from levelfield.ground.registry import load_implementation, task_module
    from levelfield.harness import runner, sizing
    from levelfield.reference.interface import Recipe

    task = runner.cached_suite(None, None).task(task_id)
    inputs_module, spec = task_module(task, "inputs"), task_module(task, "model_spec")
    inputs, _ = runner.cached_eval_set(None, None, task_id, None, task.eval_samples)
    impl = load_implementation(task_id, framework)(Recipe.from_task(task))
    largest = largest_batch or inputs_module.MAX_PREDICT_BATCH
    outcome: dict = {}

    def work():
        impl.load(spec.init_weights(0))

        def answer(indices):
            spec.to_response(impl.predict({name: array[indices] for name, array in inputs.items()}))

        costs = sizing.measure_batch_costs(answer, sizing.powers_of_two(1, largest), task.eval_samples)
        outcome["costs"] = [asdict(c) for c in costs]

    worker = threading.Thread(target=work, name="levelfield-bench-batch")
    worker.start()
    worker.join()
    return {"framework_version": impl.version(), **outcome}


def run(options: Options, config: Config) -> dict:
    results = {}
    for task_id in options.tasks:
        for framework in options.real_frameworks():
            entry = run_in_child(
                "benchmarks.batch_latency:measure",
                {"task_id": task_id, "framework": framework, "largest_batch": config.largest_batch},
                pstats_path=options.child_pstats(),
            )
            results.setdefault(task_id, {})[framework] = entry
            options.report(
                f"{task_id:16s} {framework:10s} "
                + ", ".join(f"{c['size']}: {c['median_ms']:.2f} ms" for c in entry["costs"])
            )
    return {"tasks": results, "bound_batch": BOUND_BATCH}


def implied_bound_ms(frameworks: dict, batch: int) -> tuple[float | None, float | None]:
    """(the slowest framework's median latency at `batch`, the bound the rules' derivation gives)."""
    medians = [c["median_ms"] for entry in frameworks.values() for c in entry["costs"] if c["size"] == batch]
    if not medians:
        return None, None
    slowest = max(medians)
    return slowest, max(BOUND_FLOOR_MS, BOUND_STEP_MS * math.ceil(2 * slowest / BOUND_STEP_MS))


def rows(result: dict) -> list[dict]:
    out = []
    batch = result["bound_batch"]
    for task_id, frameworks in result["tasks"].items():
        slowest, bound = implied_bound_ms(frameworks, batch)
        figures = "; ".join(
            f"{fw} {next((c['median_ms'] for c in e['costs'] if c['size'] == batch), float('nan')):.1f}"
            for fw, e in frameworks.items()
        )
        out.append(
            {
                "compared": f"{task_id}: median latency of a batch of {batch} per framework (ms)",
                "figures": figures + (f"; bound 2 x {slowest:.1f} ms rounded up: {bound} ms" if bound else ""),
                "ratio": None,
                "ratio_text": "-",
                "goal": None,
                "value": bound,
            }
        )
    return out
