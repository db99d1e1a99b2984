"""A short learning curve of image-resnet50-standard at a reduced size on this CPU: loss and eval top-1 per epoch.

    python -m benchmarks.image_curve                              # jax, compiled, 12 epochs of 64 steps
    python -m benchmarks.image_curve --framework pytorch --epochs 4 --out /tmp/curve.json

Evidence that the generated data (plaid-images-v1) has structure a ResNet
learns through the task's augmentation, for reference/image_resnet50_standard/README.md:
the task's code path at a reduced size (SPEC.resized: 64x64 crops of 72x72
images, stem 16, one bottleneck per stage of widths 16-32-64-128; the full
network takes ~15 s a step here), the generator at that image size with the
rules' seed and counts (4,096 training, 1,024 eval images, 1000 classes), the
rules' recipe (SGD momentum 0.9, weight decay 5e-5, label smoothing 0.1,
cosine) at batch 64, peak learning rate 0.1, one warm-up epoch, the harness's
batch order and each framework's pipeline. Eval: top-1 on the centre crops of
all eval images, and how often each class factor (orientation, period, colour
pair) of the predicted class is right. Not a calibration; asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

import numpy as np

from levelfield.ground.registry import load_implementation
from levelfield.reference.image_resnet50_standard.common import metric
from levelfield.reference.image_resnet50_standard.common.dataset import class_factors, generate
from levelfield.reference.image_resnet50_standard.common.inputs import centre_crop
from levelfield.reference.image_resnet50_standard.common.model_spec import SPEC
from levelfield.reference.interface import Recipe
from levelfield.reference.schedule import batch_order, learning_rates
from levelfield.rules import load_suite

TASK = "image-resnet50-standard"
SMALL = SPEC.resized(image_size=64, stem_width=16, stage_blocks=(1, 1, 1, 1), stage_widths=(16, 32, 64, 128))
STORED = 72  # 64 of 72, as 224 of 256
BATCH = 64
RESULT = Path(__file__).resolve().parent / "results" / "2026-11-25-image-resnet50-standard-curve-vm.json"


def factor_hits(predicted: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    got, want = class_factors(np.maximum(predicted, 0)), class_factors(labels)
    return {
        f"eval_{name}": round(float(np.mean(g == w)), 4)
        for name, g, w in zip(("orientation", "period", "colour"), got, want, strict=True)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", default="jax", choices=["pytorch", "tensorflow", "jax"])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)
    task = load_suite("1.1").task(TASK)
    params = {**task.dataset["params"], "image_size": STORED, "patch_size": STORED * 5 // 8}
    arrays = generate(params)
    recipe = Recipe.from_task(task, global_batch_size=BATCH, learning_rate=0.1, warmup_epochs=1)
    cls = load_implementation(TASK, args.framework)
    impl = type(f"Reduced{cls.__name__}", (cls,), {"spec": SMALL})(recipe, mode="compiled")
    impl.load(SMALL.init_weights(0))
    y = arrays["train_labels"].astype(np.int64)
    impl.set_train_data({"images": arrays["train_images"]}, y)
    eval_images = np.ascontiguousarray(centre_crop(arrays["eval_images"], SMALL.image_size))
    eval_labels = arrays["eval_labels"].astype(np.int64)
    steps_per_epoch = len(y) // BATCH
    lrs = learning_rates(recipe, steps_per_epoch, args.epochs)
    curve = []
    for epoch in range(1, args.epochs + 1):
        started = time.perf_counter()
        epoch_lrs = lrs[(epoch - 1) * steps_per_epoch : epoch * steps_per_epoch]
        losses = impl.train_steps(batch_order(0, epoch, len(y), BATCH), epoch_lrs)
        predicted = metric.predicted_classes(impl.predict({"images": eval_images}))
        row = {
            "epoch": epoch,
            "steps": epoch * steps_per_epoch,
            "train_loss_mean": round(float(losses.mean()), 4),
            "eval_top1": round(float(np.mean(predicted == eval_labels)), 4),
            **factor_hits(predicted, eval_labels),
            "epoch_s": round(time.perf_counter() - started, 1),
        }
        curve.append(row)
        print(json.dumps(row), flush=True)
    record = {
        "task": TASK,
        "framework": args.framework,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "reduced": {"crop": SMALL.image_size, "stored": STORED, "stem_width": SMALL.stem_width,
                    "stage_blocks": list(SMALL.stage_blocks), "stage_widths": list(SMALL.stage_widths)},
        "recipe": {**recipe.as_dict(), "input_workers": impl.input_workers},
        "curve": curve,
    }  # fmt: skip
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"curve in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
