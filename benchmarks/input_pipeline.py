"""The input pipeline's share of step time, per framework (image-resnet50-standard, issue 23 item 4).

    python -m benchmarks input_pipeline                         # three frameworks, ~10-20 min on this CPU
    python -m benchmarks input_pipeline --frameworks jax --quick --out /tmp/bench

Each framework runs in a fresh process (benchmarks/child.py; also because a
DataLoader forks, and must fork a process holding one framework only). The
task's compiled implementation trains the same steps two ways, side by side,
alternating which goes first in each repeat:

- **pipeline**: `train_steps` as a run calls it, the batches cut inside the
  call by the framework's pipeline (DataLoader, tf.data, the JAX prefetcher) with
  the task's default worker count (`levelfield_input_workers`);
- **in memory**: the same steps from batches the same pipeline built beforehand,
  already framework tensors (the implementation's pipeline swapped for a list):
  the step alone, as in a task whose data sits in memory.

share = 1 - median(in memory) / median(pipeline): the fraction of a step the
pipeline adds (0: fully hidden behind the step by its workers; negative within
noise). Several repeats each, median and range per figure.

The size is reduced, and the JSON says so (`config`): the stored images and the
crop are the task's (256 -> 224, uint8, 3 channels, so the pipeline does the
task's work per sample), but the network is the task's code path at a fraction
of ResNet-50's width and depth (`SPEC.resized`), because a full ResNet-50 step
takes ~15 s on this 2-core CPU. A smaller network makes the step shorter and the
pipeline's share larger than at full size: an upper bound for this CPU, not
the figure on an accelerator, where a full step takes milliseconds and the
share can be larger still.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from benchmarks.child import run_in_child
from benchmarks.options import Options

TITLE = "input pipeline: train steps with each framework's pipeline vs from in-memory batches (image-resnet50-standard)"
TASK = "image-resnet50-standard"


@dataclass(frozen=True)
class Config:
    stored: int  # stored image side, pixels
    crop: int  # the network's input side
    stem_width: int
    stage_widths: tuple[int, ...]
    batch: int
    steps: int  # per timed call
    repeats: int
    samples: int  # training images generated


FULL = Config(
    stored=256, crop=224, stem_width=16, stage_widths=(8, 16, 32, 64), batch=32, steps=4, repeats=5, samples=256
)
QUICK = Config(stored=40, crop=32, stem_width=8, stage_widths=(4, 8, 8, 16), batch=8, steps=2, repeats=2, samples=32)


def measure(framework: str, config: dict) -> dict:
    """In the child: per repeat, ms per step with the pipeline and from in-memory batches."""
    import time

    import numpy as np

    from levelfield.ground.registry import load_implementation
    from levelfield.reference.image_resnet50_standard.common.augment import step_plans
    from levelfield.reference.image_resnet50_standard.common.dataset import generate
    from levelfield.reference.image_resnet50_standard.common.model_spec import SPEC
    from levelfield.reference.interface import COMPILED, Recipe
    from levelfield.reference.schedule import batch_order
    from levelfield.rules import load_suite

    c = Config(**{**config, "stage_widths": tuple(config["stage_widths"])})
    task = load_suite("1.1").task(TASK)
    spec = SPEC.resized(image_size=c.crop, stem_width=c.stem_width, stage_blocks=(1,) * 4, stage_widths=c.stage_widths)
    params = {**task.dataset["params"], "image_size": c.stored, "patch_size": c.stored * 5 // 8}
    arrays = generate({**params, "train_samples": c.samples, "eval_samples": 1})
    recipe = Recipe.from_task(task, global_batch_size=32)  # the recipe's batch; the steps' rows set the real one
    cls = load_implementation(TASK, framework)
    impl = type(f"Reduced{cls.__name__}", (cls,), {"spec": spec})(recipe, mode=COMPILED)
    impl.load(spec.init_weights(0))
    impl.set_train_data({"images": arrays["train_images"]}, arrays["train_labels"].astype(np.int64))
    order = batch_order(seed=1, epoch=1, num_samples=c.samples, batch_size=c.batch)[: c.steps]
    lrs = np.full(c.steps, 1e-3)
    impl.train_steps(order, lrs)  # compiles, starts the workers: untimed

    pipeline = impl.pipeline
    plans = step_plans(impl.step, order, c.stored, c.crop)
    built = list(pipeline.batches(order, plans))  # framework tensors, as the pipeline hands them to the step
    if framework == "jax":
        import jax

        built = [tuple(jax.device_put(part) for part in batch) for batch in built]

    class InMemory:
        """The same batches, already built: the step alone."""

        def batches(self, batch_indices, plans):
            return iter(built)

    def timed(source) -> float:
        impl.pipeline = source
        started = time.perf_counter()
        impl.train_steps(order, lrs)  # returns after a host sync on every loss
        return (time.perf_counter() - started) * 1000.0 / c.steps

    in_memory = InMemory()
    timed(in_memory)  # the in-memory path's own first call (e.g. JAX's committed-array placement)
    runs = {"pipeline_ms": [], "in_memory_ms": []}
    for repeat in range(c.repeats):
        first, second = (pipeline, in_memory) if repeat % 2 == 0 else (in_memory, pipeline)
        for source in (first, second):
            runs["pipeline_ms" if source is pipeline else "in_memory_ms"].append(timed(source))
    impl.pipeline = pipeline
    return {"framework_version": impl.version(), "input_workers": impl.input_workers, **runs}


def run(options: Options, config: Config) -> dict:
    results = {}
    for framework in options.real_frameworks():
        entry = run_in_child(
            "benchmarks.input_pipeline:measure",
            {"framework": framework, "config": config.__dict__},
            pstats_path=options.child_pstats(),
        )
        entry.update(summarise(entry))
        results[framework] = entry
        options.report(
            f"{framework:10s} pipeline {entry['pipeline_median_ms']:.1f} ms/step, in memory "
            f"{entry['in_memory_median_ms']:.1f} ms/step, share {entry['pipeline_share']:+.3f} "
            f"({entry['input_workers']} workers)"
        )
    return {"task": TASK, "reduced_size": True, "frameworks": results}


def summarise(entry: dict) -> dict:
    with_pipeline, in_memory = statistics.median(entry["pipeline_ms"]), statistics.median(entry["in_memory_ms"])
    return {
        "pipeline_median_ms": with_pipeline,
        "in_memory_median_ms": in_memory,
        "pipeline_share": 1.0 - in_memory / with_pipeline,
    }


def spread(values: list[float]) -> str:
    return f"[{min(values):.1f}-{max(values):.1f}]"


def rows(result: dict) -> list[dict]:
    out = []
    for fw, e in result["frameworks"].items():
        out.append(
            {
                "compared": f"{fw}: ms per step, its pipeline vs in-memory batches ({e['input_workers']} workers)",
                "figures": (
                    f"pipeline {e['pipeline_median_ms']:.1f} {spread(e['pipeline_ms'])}; "
                    f"in memory {e['in_memory_median_ms']:.1f} {spread(e['in_memory_ms'])}; "
                    f"pipeline share {e['pipeline_share']:.1%}"
                ),
                "ratio": e["pipeline_median_ms"] / e["in_memory_median_ms"],
                "goal": None,
                "value": e["pipeline_share"],
            }
        )
    return out
