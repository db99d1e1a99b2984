"""image-resnet50-standard: its rules (ResNet-50's exact size), its generator plaid-images-v1 and its input
pipeline, whose three framework versions must cut bit-identical batches.

    .venv/bin/python -m pytest tests/test_image_standard.py -q

The generator's bytes at the rules' sizes are pinned by the rules' SHA-256 (tests/test_datasets_generated.py
recomputes every generated task's digest); here, on a small draw: the class structure it promises, that the
same params give the same bytes, and one-line errors for bad params. The pipelines: the augmentation
decisions (common/augment.py) are a pure function of (step, row), and the DataLoader, tf.data and the JAX
prefetcher turn the same decisions into the same float32 batches as the numpy reference, bit for bit.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from levelfield.ground.errors import UserError
from levelfield.ground.registry import task_module
from levelfield.reference.image_resnet50_standard.common import augment, metric
from levelfield.reference.image_resnet50_standard.common.dataset import PALETTES, class_factors, generate
from levelfield.reference.image_resnet50_standard.common.inputs import centre_crop, model_inputs
from levelfield.reference.schedule import batch_order
from levelfield.rules import load_suite

TASK = "image-resnet50-standard"
PARAMS = {"seed": 7, "image_size": 48, "patch_size": 32, "noise": 32, "train_samples": 96, "eval_samples": 16}
CROP = 40


@pytest.fixture(scope="module")
def arrays():
    return generate(PARAMS)


def test_rules_state_resnet50_s_exact_size_counted_from_the_shapes():
    """25,557,032 trainable parameters, torchvision's resnet50 count, from shapes alone (nothing allocated)."""
    task = load_suite("1.1").task(TASK)
    spec = task_module(task, "model_spec").SPEC
    assert spec.__class__.from_task(task) == spec
    assert spec.trainable_count() == task.model["parameters"] == 25_557_032
    assert (task.family, task.size_class) == ("image-classification", "standard")
    shapes = spec.parameter_shapes
    assert shapes["stem.conv.kernel"] == (7, 7, 3, 64) and shapes["head.kernel"] == (2048, 1000)
    assert shapes["stage2_block0.conv2.kernel"] == (3, 3, 128, 128)  # v1.5: the stride sits on this 3x3 conv
    assert sum(name.endswith(".conv1.kernel") for name in shapes) == 16  # 3 + 4 + 6 + 3 bottlenecks


def test_each_image_holds_its_class_colour_pair_on_a_patch(arrays):
    images, y = arrays["train_images"], arrays["train_labels"]
    assert images.shape == (96, 48, 48, 3) and images.dtype == np.uint8 and y.dtype == np.uint16
    assert y.max() < 1000 and len(np.unique(y)) > 80  # 1000 classes drawn uniformly: few repeats in 96
    _, _, palette = class_factors(y)
    for image, p in zip(images, palette, strict=True):
        colours = np.asarray(PALETTES[p], np.int64)  # [2, 3]
        # Pixels within the noise (+-16) of one of the class's two colours: at least the patch's 32 x 32.
        near = np.abs(image[:, :, None, :].astype(np.int64) - colours).max(axis=-1).min(axis=-1) <= 16
        assert near.sum() >= 32 * 32, near.sum()


def test_the_same_params_give_the_same_bytes_and_eval_does_not_move_with_train(arrays):
    again = generate(PARAMS)
    assert all(np.array_equal(again[name], arrays[name]) for name in arrays)
    fewer = generate({**PARAMS, "train_samples": 32})
    np.testing.assert_array_equal(fewer["eval_images"], arrays["eval_images"])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"patch_size": 49}, "patch_size must be in \\[1, image_size 48\\], got 49"),
        ({"noise": 200}, "noise must be in \\[0, 128\\], got 200"),
    ],
)
def test_bad_params_fail_in_one_line(change, message):
    with pytest.raises(ValueError, match=f"^plaid-images-v1: {message}$"):
        generate({**PARAMS, **change})


def test_eval_inputs_are_uint8_centre_crops_and_the_metric_takes_int16_ids(arrays):
    inputs = model_inputs({**arrays, "eval_images": np.zeros((2, 256, 256, 3), np.uint8)}, "eval")
    assert inputs["images"].shape == (2, 224, 224, 3) and inputs["images"].dtype == np.uint8
    image = np.arange(6 * 6).reshape(1, 6, 6, 1)
    np.testing.assert_array_equal(centre_crop(image, 4)[0, :, :, 0], image[0, 1:5, 1:5, 0])
    logits = np.zeros((3, 1000), np.float32)
    logits[[0, 1, 2], [999, 500, 3]] = 1.0
    assert metric.predicted_classes(logits).tolist() == [999, 500, 3]  # int8 would wrap past 127
    assert metric.score(logits, np.array([999, 500, 4])) == pytest.approx(2 / 3)


def test_decisions_are_a_function_of_step_and_row_in_range_and_vary():
    rows = batch_order(seed=1, epoch=1, num_samples=4096, batch_size=256)[0]
    plan = augment.decisions(3, rows, stored=256, crop=224)
    assert plan.dtype == np.int32 and plan.shape == (256, 3)
    np.testing.assert_array_equal(plan, augment.decisions(3, rows, 256, 224))
    # The same sample at another step (another epoch) is cut anew.
    assert not np.array_equal(plan, augment.decisions(4, rows, 256, 224))
    top, left, flip = plan.T
    assert top.min() >= 0 and top.max() <= 32 and left.min() >= 0 and left.max() <= 32
    assert len(np.unique(top)) > 25 and len(np.unique(left)) > 25 and 0.4 < flip.mean() < 0.6


def steps_and_plans(arrays, steps: int = 3, batch: int = 16):
    order = batch_order(seed=2, epoch=1, num_samples=len(arrays["train_labels"]), batch_size=batch)[:steps]
    plans = [augment.decisions(k, rows, PARAMS["image_size"], CROP) for k, rows in enumerate(order)]
    reference = [augment.augment(arrays["train_images"], rows, p, CROP) for rows, p in zip(order, plans, strict=True)]
    return order, plans, reference


def test_the_reference_batch_is_the_crop_flipped_and_normalised(arrays):
    order, plans, reference = steps_and_plans(arrays)
    top, left, flip = plans[0][0]
    crop = arrays["train_images"][order[0][0], top : top + CROP, left : left + CROP].astype(np.float64)
    if flip:
        crop = crop[:, ::-1]
    expected = (crop - augment.MEAN.astype(np.float64)) / np.array([58.395, 57.12, 57.375])
    np.testing.assert_allclose(reference[0][0], expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("workers", [0, 2])
def test_tf_data_cuts_the_reference_batches_bit_for_bit(arrays, workers):
    from levelfield.reference.frameworks.tensorflow.pipeline import Pipeline

    order, plans, reference = steps_and_plans(arrays)
    y = arrays["train_labels"].astype(np.int64)
    pipeline = Pipeline(arrays["train_images"], y, CROP, workers)
    got = list(pipeline.batches(order[:1], plans[:1])) + list(pipeline.batches(order[1:], plans[1:]))  # two calls
    pipeline.close()
    assert len(got) == len(reference)
    for (x, labels), expected, rows in zip(got, reference, order, strict=True):
        np.testing.assert_array_equal(x.numpy(), expected)
        np.testing.assert_array_equal(labels.numpy(), y[rows])


@pytest.mark.parametrize("workers", [0, 2])
def test_the_jax_prefetcher_cuts_the_reference_batches_bit_for_bit(arrays, workers):
    from levelfield.reference.frameworks.jax.pipeline import Pipeline

    order, plans, reference = steps_and_plans(arrays)
    pipeline = Pipeline(arrays["train_images"], arrays["train_labels"], CROP, workers)
    got = list(pipeline.batches(order, plans))
    pipeline.close()
    assert len(got) == len(reference)
    for (x, _), expected in zip(got, reference, strict=True):
        np.testing.assert_array_equal(x, expected)


# In a fresh process: the DataLoader forks its workers, and a fork of this test process (which may have JAX's
# and TensorFlow's threads by now) could deadlock; `levelfield train` runs one framework per process.
TORCH_SCRIPT = """
import hashlib, sys, numpy as np
from levelfield.reference.image_resnet50_standard.common import augment
from levelfield.reference.image_resnet50_standard.common.dataset import generate
from levelfield.reference.schedule import batch_order
from levelfield.reference.frameworks.pytorch.pipeline import Pipeline
params, crop, workers = eval(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
arrays = generate(params)
order = batch_order(seed=2, epoch=1, num_samples=len(arrays["train_labels"]), batch_size=16)[:3]
plans = [augment.decisions(k, rows, params["image_size"], crop) for k, rows in enumerate(order)]
pipeline = Pipeline(arrays["train_images"], arrays["train_labels"].astype(np.int64), crop, workers)
for call in (slice(0, 1), slice(1, 3)):  # two train_steps calls: persistent workers serve each call's plans
    for x, y in pipeline.batches(order[call], plans[call]):
        print(hashlib.sha256(x.permute(0, 2, 3, 1).contiguous().numpy().tobytes()).hexdigest(), y.tolist())
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_the_torch_dataloader_cuts_the_reference_batches_bit_for_bit(arrays, workers):
    import hashlib

    order, _, reference = steps_and_plans(arrays)
    result = subprocess.run(
        [sys.executable, "-c", TORCH_SCRIPT, repr(PARAMS), str(CROP), str(workers)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    y = arrays["train_labels"].astype(np.int64)
    expected = [
        f"{hashlib.sha256(x.tobytes()).hexdigest()} {y[rows].tolist()}"
        for x, rows in zip(reference, order, strict=True)
    ]
    assert result.stdout.splitlines() == expected


def test_input_workers_default_from_the_cores_and_a_bad_setting_is_one_line(monkeypatch):
    monkeypatch.delenv(augment.WORKERS_ENV, raising=False)
    assert 1 <= augment.input_workers() <= 8
    # Half the CPUs this process may run on: under --nproc N a rank's share, not the host's cores.
    for cpus, workers in ((1, 1), (2, 1), (8, 4), (32, 8)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cpus: set(range(n)))
        monkeypatch.setattr(os, "cpu_count", lambda: 64)
        assert augment.input_workers() == workers, cpus
    monkeypatch.setenv(augment.WORKERS_ENV, "3")
    assert augment.input_workers() == 3
    monkeypatch.setenv(augment.WORKERS_ENV, "many")
    with pytest.raises(UserError, match=r"^\$LEVELFIELD_INPUT_WORKERS: found 'many', expected a whole number"):
        augment.input_workers()
