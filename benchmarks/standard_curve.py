"""A short learning curve of ctr-dlrm-standard on this CPU: the training loss and eval AUC over a few hundred steps.

    python -m benchmarks.standard_curve                                  # pytorch, 400 steps at batch 256
    python -m benchmarks.standard_curve --framework jax --steps 200 --out /tmp/curve.json

Evidence that the generated data (ctr-synthetic-v1 at MLPerf DLRM's shapes) has
structure the full-size model learns, for reference/ctr_dlrm_standard/README.md:
the task's own network (full tables, 1.07 GiB), the rules' recipe (plain SGD,
learning rate 1.0) at a small batch, the harness's batch order, eval AUC on the
first EVAL_ROWS eval samples. Not a calibration and not a time-to-target run
(the task's target is provisional); it measures nothing but the curve, and
asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

import numpy as np

from levelfield.ground.registry import load_implementation, task_module
from levelfield.reference.datasets import load_dataset
from levelfield.reference.interface import Recipe
from levelfield.reference.schedule import batch_order
from levelfield.rules import load_suite

TASK = "ctr-dlrm-standard"
EVAL_ROWS = 16384
RESULT = Path(__file__).resolve().parent / "results" / "2026-11-25-ctr-dlrm-standard-curve-vm.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", default="pytorch", choices=["pytorch", "tensorflow", "jax"])
    parser.add_argument("--mode", default="eager", choices=["eager", "compiled"])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--every", type=int, default=50, help="steps between evaluations")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)

    task = load_suite("1.1").task(TASK)
    inputs_module, metric, spec = (task_module(task, part) for part in ("inputs", "metric", "model_spec"))
    started = time.perf_counter()
    arrays = load_dataset(task)
    train_x, train_y = inputs_module.model_inputs(arrays, "train"), inputs_module.labels(arrays, "train")
    eval_x = {k: v[:EVAL_ROWS] for k, v in inputs_module.model_inputs(arrays, "eval").items()}
    eval_y = inputs_module.labels(arrays, "eval")[:EVAL_ROWS]
    recipe = Recipe.from_task(task)  # the rules' default recipe: SGD, lr 1.0
    impl = load_implementation(TASK, args.framework)(recipe, mode=args.mode)
    impl.load(spec.init_weights(args.seed))
    impl.set_train_data(train_x, train_y)
    order = batch_order(args.seed, 0, len(train_y), args.batch)[: args.steps]
    print(f"ready in {time.perf_counter() - started:.0f} s", flush=True)
    points = [{"step": 0, "eval_auc": metric.score(impl.predict(eval_x), eval_y)}]
    for start in range(0, args.steps, args.every):
        chunk = order[start : start + args.every]
        losses = impl.train_steps(chunk, np.full(len(chunk), recipe.learning_rate))
        auc = metric.score(impl.predict(eval_x), eval_y)
        points.append({"step": start + len(chunk), "train_loss_mean": float(losses.mean()), "eval_auc": auc})
        print(points[-1], flush=True)
    record = {
        "what": f"{TASK} learning curve, full-size model, rules recipe at batch {args.batch}",
        "date": datetime.date.today().isoformat(),
        "framework": args.framework,
        "mode": args.mode,
        "global_batch_size": args.batch,
        "learning_rate": recipe.learning_rate,
        "seed": args.seed,
        "eval_rows": EVAL_ROWS,
        "train_loss_mean": "mean training loss of the steps since the previous point",
        "points": points,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
