"""Compiled against eager mode per task and framework: time to first step and steady-state step time.

    python -m benchmarks compile                                   # three tasks x three frameworks
    python -m benchmarks compile --tasks ctr-dlrm --frameworks jax --quick --out /tmp/bench

Each task x framework x mode runs in a fresh process (benchmarks/child.py),
so nothing one measurement compiled or cached helps the next; PyTorch's
inductor gets an empty on-disk cache each time (TORCHINDUCTOR_CACHE_DIR), so
its first step is a cold compilation, as on a new machine. In that process:
the implementation (reference/interface.py) is built with `mode="compiled"`
(torch.compile, tf.function(jit_compile=True), jax.jit) or `mode="eager"`,
loads the initial weights (seed 0) and the profile's training rows, then:

- first step: the first `train_steps` call of one step, as the trainer's
  warm-up (tracing and compilation happen here in compiled mode);
- steady step: `chunks` calls of `chunk_steps` steps each after one untimed
  call, each call's time / chunk_steps; the median is reported (calls of
  several steps, as the trainer makes, so the per-call cost of making the
  steps' index and rate tensors or moving them to the device is shared as
  it is there).

Ratios are eager / compiled: above 1 means compiling pays off. Data order and
learning rates are reference/schedule.py's, as in the trainer.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass

from benchmarks.child import run_in_child
from benchmarks.options import Options, ratio

TITLE = "compiled vs eager: time to first step and steady-state step time, per task and framework"
DEFAULT_TASKS = ("fmnist-resnet", "seq-transformer", "ctr-dlrm")
MODES = ("compiled", "eager")


@dataclass(frozen=True)
class Config:
    """FULL: submission-profile data, 1 + 5 calls of 4 steps; QUICK: smoke data, 1 + 2 calls of 2 steps.

    Few steps because eager steps are slow: on the busy 2-core VM a quick run measured eager JAX at
    ~1.4 s per seq-transformer step and ~3.8 s per fmnist-resnet step (compiled: 0.2 s and 2.2 s).
    """

    profile: str
    chunk_steps: int  # steps per timed train_steps call
    chunks: int  # timed calls after the untimed one


FULL = Config(profile="submission", chunk_steps=4, chunks=5)
QUICK = Config(profile="smoke", chunk_steps=2, chunks=2)


def run(options: Options, config: Config) -> dict:
    """{"profile", "tasks": {task: {framework: {"compiled": figures, "eager": figures, "ratio": {...}}}}}."""
    results = {}
    for task_id in options.tasks:
        results[task_id] = {}
        for framework in options.real_frameworks():
            entry = {}
            for mode in MODES:
                with tempfile.TemporaryDirectory(prefix="levelfield-bench-inductor-") as cache:
                    entry[mode] = run_in_child(
                        "benchmarks.compile_modes:measure",
                        {
                            "task_id": task_id,
                            "framework": framework,
                            "mode": mode,
                            "profile": config.profile,
                            "chunk_steps": config.chunk_steps,
                            "chunks": config.chunks,
                        },
                        env={"TORCHINDUCTOR_CACHE_DIR": cache},
                        pstats_path=options.child_pstats(),
                    )
            entry["ratio"] = {
                "first_step": ratio(entry["eager"]["first_step_s"], entry["compiled"]["first_step_s"]),
                "step": ratio(entry["eager"]["step_ms_median"], entry["compiled"]["step_ms_median"]),
            }
            results[task_id][framework] = entry
            options.report(format_entry(task_id, framework, entry))
    return {"profile": config.profile, "chunk_steps": config.chunk_steps, "chunks": config.chunks, "tasks": results}


def measure(task_id: str, framework: str, mode: str, profile: str, chunk_steps: int, chunks: int) -> dict:
    """In a child process: one implementation in one mode, timed (see the module docstring)."""
    import numpy as np

    from benchmarks.tasks import load_task
    from levelfield.ground.registry import load_implementation
    from levelfield.reference.interface import Recipe
    from levelfield.reference.schedule import batch_order, learning_rates

    kit = load_task(task_id, profile)
    (train_inputs, train_labels), _ = kit.splits()
    recipe = Recipe.from_task(kit.task)
    started = time.perf_counter()
    impl_class = load_implementation(task_id, framework)  # imports the framework
    import_s = time.perf_counter() - started
    impl = impl_class(recipe, mode=mode)
    impl.load(kit.spec.init_weights(0))
    impl.set_train_data(train_inputs, train_labels)
    batch, n = recipe.global_batch_size, len(train_labels)
    needed = 1 + (chunks + 1) * chunk_steps
    epochs = -(-needed // (n // batch))  # small profiles hold fewer steps per epoch than needed
    order = np.concatenate([batch_order(0, epoch, n, batch) for epoch in range(epochs)])
    lrs = learning_rates(recipe, n // batch, epochs)

    started = time.perf_counter()
    impl.train_steps(order[:1], lrs[:1])
    first_step_s = time.perf_counter() - started
    calls_s = []
    for call in range(chunks + 1):
        rows = slice(1 + call * chunk_steps, 1 + (call + 1) * chunk_steps)
        started = time.perf_counter()
        impl.train_steps(order[rows], lrs[rows])
        calls_s.append(time.perf_counter() - started)
    step_ms = [1000 * s / chunk_steps for s in calls_s[1:]]  # the first call is the untimed one
    return {
        "framework_version": impl.version(),
        "mode": impl.mode,
        "device": str(impl.device),
        "batch_size": batch,
        "import_s": import_s,
        "first_step_s": first_step_s,
        "step_ms_median": statistics.median(step_ms),
        "step_ms_min": min(step_ms),
        "step_ms": step_ms,
    }


def format_entry(task_id: str, framework: str, e: dict) -> str:
    c, g, r = e["compiled"], e["eager"], e["ratio"]
    return (
        f"{task_id:15s} {framework:10s} first step: compiled {c['first_step_s']:.2f} s, eager "
        f"{g['first_step_s']:.2f} s (eager/compiled x{r['first_step']:.2f}); step: compiled "
        f"{c['step_ms_median']:.2f} ms, eager {g['step_ms_median']:.2f} ms (x{r['step']:.2f})"
    )


def rows(result: dict) -> list[dict]:
    out = []
    for task_id, frameworks in result["tasks"].items():
        for framework, e in frameworks.items():
            c, g = e["compiled"], e["eager"]
            out.append(
                {
                    "compared": f"{task_id} / {framework} {c['framework_version']}: eager vs compiled "
                    f"(batch {c['batch_size']})",
                    "figures": f"first step {c['first_step_s']:.2f} s compiled, {g['first_step_s']:.2f} s eager "
                    f"(x{e['ratio']['first_step']:.2f}); median step {c['step_ms_median']:.2f} ms "
                    f"compiled, {g['step_ms_median']:.2f} ms eager",
                    "ratio": e["ratio"]["step"],
                    "goal": None,
                    "value": None,
                }
            )
    return out
