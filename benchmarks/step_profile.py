"""The steady training step and predict call per task and framework, the step split into its parts (issue 17).

    python -m benchmarks step                                     # three tasks x three frameworks, compiled
    python -m benchmarks step --tasks ctr-dlrm --quick --out /tmp/bench

Each task x framework runs in a fresh process (benchmarks/child.py) with the
compiled implementation (torch.compile, tf.function(jit_compile=True),
jax.jit) at the rules' default global batch size (`Recipe.from_task`, as the
trainer), seed-0 weights and the profile's training rows, in the trainer's
data order and learning rates (reference/schedule.py). After warm-up
(compilation included) and an untimed probe that sizes the rounds (at least
`steps` steps, and enough to last `round_s`: a 3 ms step timed 4 times is
noise), each of `repeats` rounds times:

- the steady step: the real `train_steps` loop over `steps` steps, wall time
  per step (what the trainer pays: compiled calls and the loop's host work);
- its parts over the next `steps` steps: forward, backward and optimizer
  update, by each framework's own method (benchmarks/step_torch.py,
  step_tf.py, step_jax.py; the method is stated in the result), and host
  overhead = the step minus those three, so within one round the four parts
  add up to the step exactly. Medians over rounds need not (a median is not
  additive): `parts_gap` says by how much they miss the median step, and the
  summary marks a split whose gap exceeds `PARTS_SUM_TOLERANCE` as not to be
  read.

Then the steady predict call (the implementation's `predict` on the task's
largest padded bucket of eval rows, MAX_PREDICT_BATCH; median over calls
after an untimed one) and a trace of one steady step by the framework's own
profiler, kept as its top ops by self time (`TOP_OPS`).

Per task, each framework's median step and predict call are divided by the
fastest framework's; issue 17's goal is every ratio <= 2 (benchmarks/goals.py).
"""

from __future__ import annotations

import importlib
import math
import time
from dataclasses import dataclass

from benchmarks.child import run_in_child
from benchmarks.options import Options, ratio
from benchmarks.trace_summary import TOP_OPS, spread

TITLE = "steady train step (forward, backward, optimizer, host) and predict call per task and framework, compiled"
DEFAULT_TASKS = ("fmnist-resnet", "seq-transformer", "ctr-dlrm")
PARTS = ("forward", "backward", "optimizer", "host")
# The medians of the parts may add up to a little more or less than the median step (a median is not
# additive); more than this fraction of the step apart means the rounds disagree too much for the split
# to be read (the summary says so next to it).
PARTS_SUM_TOLERANCE = 0.25
# Per framework: the module that splits its step, and the class in it.
PART_MODULES = {
    "pytorch": ("benchmarks.step_torch", "TorchParts"),
    "tensorflow": ("benchmarks.step_tf", "TfParts"),
    "jax": ("benchmarks.step_jax", "JaxParts"),
}


@dataclass(frozen=True)
class Config:
    """FULL: submission data, 5 rounds of 4 steps or 0.25 s, predict on the task's largest bucket; QUICK: smoke
    data, 2 rounds of 2 steps, 64 predict rows."""

    profile: str
    warmup_steps: int  # real steps, then an untimed probe of `steps` steps, then one untimed round of the parts
    steps: int  # steps per timed round (of the real loop and of the parts each), at least
    round_s: float  # ... and as many more as make the probe's steps last this long (fast steps are noisy)
    repeats: int  # timed rounds
    predict_calls: int  # timed predict calls after an untimed one
    predict_rows: int | None  # None: the task's MAX_PREDICT_BATCH (its largest padded bucket)


FULL = Config(
    profile="submission", warmup_steps=3, steps=4, round_s=0.25, repeats=5, predict_calls=7, predict_rows=None
)
QUICK = Config(profile="smoke", warmup_steps=1, steps=2, round_s=0.0, repeats=2, predict_calls=2, predict_rows=64)


def run(options: Options, config: Config) -> dict:
    """{"parts_sum_tolerance", "top_ops", "tasks": {task: {"frameworks": {framework: figures},
    "train": comparison, "predict": comparison}}} (comparison: see `compare`)."""
    tasks = {}
    for task_id in options.tasks:
        frameworks = {}
        for framework in options.real_frameworks():
            frameworks[framework] = run_in_child(
                "benchmarks.step_profile:measure",
                {"task_id": task_id, "framework": framework, **config.__dict__},
                pstats_path=options.child_pstats(),
            )
            options.report(format_entry(task_id, framework, frameworks[framework]))
        tasks[task_id] = {"frameworks": frameworks, **compare(frameworks)}
    return {"parts_sum_tolerance": PARTS_SUM_TOLERANCE, "top_ops": TOP_OPS, "tasks": tasks}


def compare(frameworks: dict) -> dict:
    """Each framework's median step and predict call against the fastest framework's (ratio >= 1):
    {"train" | "predict": {"fastest": framework, "ratios": {framework: ratio}, "worst_ratio": ratio}}."""
    out = {}
    for kind, figure in (("train", lambda e: e["step_ms"]["median"]), ("predict", lambda e: e["predict_ms"]["median"])):
        fastest = min(frameworks, key=lambda f: figure(frameworks[f]))
        best = figure(frameworks[fastest])
        out[kind] = {
            "fastest": fastest,
            "ratios": {f: ratio(figure(e), best) for f, e in frameworks.items()},
        }
        out[kind]["worst_ratio"] = max(out[kind]["ratios"].values())
    return out


def measure(
    task_id: str,
    framework: str,
    profile: str,
    warmup_steps: int,
    steps: int,
    round_s: float,
    repeats: int,
    predict_calls: int,
    predict_rows: int | None,
) -> dict:
    """In a child process: one compiled implementation's steady step, its parts, predict and trace."""
    import os

    import numpy as np

    from benchmarks.tasks import load_task
    from levelfield.ground.registry import load_implementation
    from levelfield.reference.interface import COMPILED, Recipe
    from levelfield.reference.schedule import batch_order, learning_rates

    load_at_start = os.getloadavg()  # this child's: a busy machine slows some frameworks far more than others
    kit = load_task(task_id, profile)
    (train_inputs, train_labels), (eval_inputs, _) = kit.splits()
    recipe = Recipe.from_task(kit.task)
    impl = load_implementation(task_id, framework)(recipe, mode=COMPILED)
    impl.load(kit.spec.init_weights(0))
    impl.set_train_data(train_inputs, train_labels)
    module_name, class_name = PART_MODULES[framework]
    parts_module = importlib.import_module(module_name)
    parts = getattr(parts_module, class_name)(impl, task_id)

    batch, n = recipe.global_batch_size, len(train_labels)

    def schedule(total_steps: int) -> tuple[np.ndarray, np.ndarray]:
        """The trainer's batches and rates, over as many epochs as `total_steps` need (smoke data is small)."""
        epochs = -(-total_steps // (n // batch))
        order = np.concatenate([batch_order(0, epoch, n, batch) for epoch in range(epochs)])
        return order, learning_rates(recipe, n // batch, epochs)

    order, lrs = schedule(warmup_steps + 2 * steps)
    cursor = 0

    def take(count: int) -> slice:
        nonlocal cursor
        cursor += count
        return slice(cursor - count, cursor)

    warm = take(warmup_steps)
    impl.train_steps(order[warm], lrs[warm])
    probe = take(steps)  # untimed for the result: sizes the rounds
    started = time.perf_counter()
    impl.train_steps(order[probe], lrs[probe])
    probe_step_s = (time.perf_counter() - started) / steps
    steps = max(steps, math.ceil(round_s / probe_step_s))  # a round of a fast step lasts round_s
    warm = take(steps)
    order, lrs = schedule(cursor + (2 * repeats) * steps + 1)  # the same first epochs, more of them
    parts.warm_up(order[warm], lrs[warm])
    rounds = {name: [] for name in ("step", *PARTS)}
    for _ in range(repeats):
        real = take(steps)
        started = time.perf_counter()
        impl.train_steps(order[real], lrs[real])
        step_ms = 1000 * (time.perf_counter() - started) / steps
        split = take(steps)
        timed = parts.time_parts(order[split], lrs[split])
        rounds["step"].append(step_ms)
        for part in ("forward", "backward", "optimizer"):
            rounds[part].append(timed[part])
        rounds["host"].append(step_ms - sum(timed.values()))

    wanted = predict_rows or kit.inputs.MAX_PREDICT_BATCH
    request = {name: array[:wanted] for name, array in eval_inputs.items()}
    rows = len(next(iter(request.values())))  # fewer only if the profile's eval split is smaller
    impl.predict(request)  # compiles this bucket
    predict_ms = []
    for _ in range(predict_calls):
        started = time.perf_counter()
        impl.predict(request)
        predict_ms.append(1000 * (time.perf_counter() - started))

    traced = take(1)
    top_ops = parts.trace(order[traced], lrs[traced], TOP_OPS)
    figures = {f"{name}_ms": spread(values) for name, values in rounds.items()}
    parts_sum = sum(figures[f"{part}_ms"]["median"] for part in PARTS)
    return {
        "framework_version": impl.version(),
        "device": str(impl.device),
        "threads": parts.threads(),
        "load_average_at_start": load_at_start,
        "batch_size": batch,
        "steps": steps,
        "repeats": repeats,
        "method": parts_module.METHOD,
        **figures,
        "parts_sum_ms": parts_sum,
        "parts_gap": (parts_sum - figures["step_ms"]["median"]) / figures["step_ms"]["median"],
        "predict_rows": rows,
        "predict_ms": spread(predict_ms),
        "trace": {"profiler": parts_module.PROFILER, "what": "one steady train_steps step", "top_ops": top_ops},
    }


def format_entry(task_id: str, framework: str, e: dict) -> str:
    split = ", ".join(f"{part} {e[f'{part}_ms']['median']:.2f}" for part in PARTS)
    return (
        f"{task_id:15s} {framework:10s} step {e['step_ms']['median']:.2f} ms ({split}); "
        f"predict {e['predict_rows']} rows {e['predict_ms']['median']:.2f} ms"
    )


def rows(result: dict) -> list[dict]:
    out = []
    for task_id, task in result["tasks"].items():
        for framework, e in task["frameworks"].items():
            step, predict = e["step_ms"], e["predict_ms"]
            split = ", ".join(f"{part} {e[f'{part}_ms']['median']:.2f}" for part in PARTS)
            split += " ms"
            if abs(e["parts_gap"]) > result["parts_sum_tolerance"]:
                split += f" (the parts' medians miss the step by {e['parts_gap']:+.0%}: split not to be read)"
            who = f"{task_id} / {framework} {e['framework_version']}"
            for kind, what, figure in (
                ("train", f"train step (batch {e['batch_size']})", step),
                ("predict", f"predict {e['predict_rows']} rows", predict),
            ):
                figures = f"median {figure['median']:.2f} ms ({figure['min']:.2f}-{figure['max']:.2f})"
                out.append(
                    {
                        "compared": f"{who}: {what} vs the fastest ({task[kind]['fastest']})",
                        "figures": f"{figures} = {split}" if kind == "train" else figures,
                        "ratio": task[kind]["ratios"][framework],
                        "goal": f"step_{kind}_to_fastest",
                        "value": task[kind]["ratios"][framework],
                    }
                )
        for kind in ("train", "predict"):
            verdict = task[kind]
            out.append(
                {
                    "compared": f"{task_id}: slowest {kind} {'step' if kind == 'train' else 'call'} vs the fastest",
                    "figures": ", ".join(f"{f} x{r:.2f}" for f, r in verdict["ratios"].items()),
                    "ratio": verdict["worst_ratio"],
                    "goal": f"step_{kind}_to_fastest",
                    "value": verdict["worst_ratio"],
                }
            )
    return out


def notes(result: dict) -> list[str]:
    """Markdown under the table: each step's method and its top ops by self time (the trace evidence)."""
    lines = []
    for task_id, task in result["tasks"].items():
        for framework, e in task["frameworks"].items():
            trace = e["trace"]
            lines += [f"**{task_id} / {framework}**: {e['method']}. Top ops of {trace['what']} ({trace['profiler']}):"]
            lines += [
                "",
                "```text",
                *(f"{op['self_ms']:10.3f} ms {op['calls']:6d}x  {op['op']}" for op in trace["top_ops"]),
            ]
            lines += ["```", ""]
    return lines
