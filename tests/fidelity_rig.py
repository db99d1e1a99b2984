"""Rules 1.2's fidelity gate at reduced sizes: each standard task's code path, weights generator, float64
reference and agreement metric on a network small enough to run three frameworks in seconds.

Used by tests/test_fidelity_<family>.py. A rig is one family's reduced spec, data from the task's own
generator at reduced shapes, the task's weights generator run on it (`generate_for`), the float64
reference document of those weights (the task's `fidelity_reference.document`), and `implementation(...)`:
the task's implementation in a framework with the reduced spec (a subclass, as the equivalence tests make
them). `agreement(outputs, precision)` scores predict's outputs as the runner does: the task's response rows
(`model_spec.to_response`) through the task's `common/fidelity.py`, with the rules' tolerance at that
precision.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from levelfield.ground.fidelity import _parsed, gate, reference_text
from levelfield.ground.registry import load_implementation, task_module
from levelfield.reference.fidelity_weights import parameter_order
from levelfield.reference.interface import Recipe
from levelfield.rules import load_suite

RULES_VERSION = "1.2"


@dataclass
class Rig:
    task_id: str
    spec: object
    weights: dict[str, np.ndarray]
    inputs: dict[str, np.ndarray]  # the reduced gate set, as predict takes it
    reference: dict  # parsed, as load_reference returns it
    overrides: dict = field(default_factory=dict)  # class attributes of the reduced implementation

    @property
    def task(self):
        return load_suite(RULES_VERSION).task(self.task_id)

    def implementation(
        self, framework: str, precision: str = "fp32", mode: str = "compiled", weights: dict | None = None, **attributes
    ):
        """The task's implementation in `framework` at the reduced spec, loaded with a copy of `weights` (the
        rig's by default); `attributes` override more class attributes (a planted break)."""
        cls = load_implementation(self.task_id, framework)
        reduced = type(f"Reduced{cls.__name__}", (cls,), {"spec": self.spec, **self.overrides, **attributes})
        recipe = Recipe.from_task(self.task, global_batch_size=32).with_precision(precision)
        impl = reduced(recipe, mode=mode)
        impl.load({k: v.copy() for k, v in (self.weights if weights is None else weights).items()})
        return impl

    def frameworks(self, precision: str = "fp32") -> list[str]:
        """The frameworks compared (tests/equivalence.py's, ONNX Runtime among them) whose implementation of
        the task runs `precision`: ONNX Runtime serves fp32 only."""
        from equivalence import INFERENCE_FRAMEWORKS

        return [fw for fw in INFERENCE_FRAMEWORKS if precision in load_implementation(self.task_id, fw).precisions]

    def eager_predict(self, framework: str, weights: dict, inputs: dict) -> np.ndarray:
        """`framework`'s eager predict of `inputs` with `weights` loaded (a planted break edits either)."""
        return self.implementation(framework, mode="eager", weights=weights).predict(inputs)

    def assert_fails_the_gate(self, outputs: np.ndarray, label: str) -> None:
        """A broken implementation's outputs: agreement below 0.5, so below either precision's threshold."""
        value = self.agreement(outputs)
        assert value < 0.5 < min(self.threshold("fp32"), self.threshold("bf16")), (label, value)

    def agreement(self, outputs: np.ndarray, precision: str = "fp32") -> float:
        rows = task_module(self.task_id, "model_spec").to_response(outputs)
        tolerance = gate(self.task, precision)["tolerance"]
        return task_module(self.task_id, "fidelity").agreement(rows, self.reference, tolerance)[0]

    def threshold(self, precision: str = "fp32") -> float:
        return gate(self.task, precision)["threshold"]

    def digest(self) -> str:
        from levelfield.reference.datasets import arrays_digest

        return arrays_digest(self.weights, list(self.spec.parameter_shapes))


def assert_within_precision(worst: float, precision: str, forward_atol: float, bf16_atol: float, label: str) -> None:
    """`worst`, a framework's largest distance from the float64 logits: fp32 within forward_atol; bf16 within
    bf16_atol but more than 10 x forward_atol away (the low precision ran)."""
    if precision == "fp32":
        assert worst <= forward_atol, (label, worst)
    else:
        assert 10 * forward_atol < worst <= bf16_atol, (label, worst)


def skip_unless_tested(framework: str) -> None:
    from equivalence import FRAMEWORKS

    if framework not in FRAMEWORKS:
        pytest.skip(f"{framework} not among LEVELFIELD_TEST_FRAMEWORKS")


def parsed(document: dict) -> dict:
    """A reference document as load_reference returns it (written and parsed as the rules file is)."""
    text = reference_text(document)
    return _parsed(text, "reduced reference")


def image_rig(samples: int = 48) -> Rig:
    """ResNet-50's code path at 32x32 crops of 40x40 images, one bottleneck per stage (widths 8-16-16-32)."""
    from levelfield.reference.image_resnet50_standard.common import fidelity_reference as ref
    from levelfield.reference.image_resnet50_standard.common.dataset import generate
    from levelfield.reference.image_resnet50_standard.common.inputs import centre_crop
    from levelfield.reference.image_resnet50_standard.common.model_spec import SPEC

    spec = SPEC.resized(image_size=32, stem_width=8, stage_blocks=(1, 2, 1, 1), stage_widths=(8, 16, 16, 32))
    task = load_suite(RULES_VERSION).task("image-resnet50-standard")
    params = {**task.dataset["params"], "image_size": 40, "patch_size": 24}
    arrays = generate({**params, "train_samples": 32, "eval_samples": samples})
    crop = lambda images: np.ascontiguousarray(centre_crop(images, spec.image_size))  # noqa: E731
    weights = ref.generate_for(spec, {"seed": 7}, crop(arrays["train_images"]))
    pixels = crop(arrays["eval_images"])
    logits = ref.reference_logits(spec, weights, pixels)
    document = ref.document(task.id, logits, float(task.inference["fidelity"]["reference"]["max_gap"]), "0" * 64)
    return Rig(task.id, spec, weights, {"images": pixels}, parsed(document))


def encoder_rig(samples: int = 16) -> Rig:
    """The BERT-sized encoder's code path at 2 layers, d_model 64, 4 heads, a 512-token vocabulary, 32 tokens."""
    from levelfield.reference.seq_transformer_standard.common import fidelity_reference as ref
    from levelfield.reference.seq_transformer_standard.common.dataset import generate
    from levelfield.reference.seq_transformer_standard.common.model_spec import SPEC

    spec = SPEC.resized(num_layers=2, d_model=64, num_heads=4, ff_dim=256, vocab_size=512, num_classes=512, seq_len=32)
    task = load_suite(RULES_VERSION).task("seq-transformer-standard")
    params = {**task.dataset["params"], "vocab_size": spec.vocab_size, "seq_len": spec.seq_len}
    arrays = generate({**params, "train_samples": 8, "eval_samples": samples})
    weights = ref.generate_for(spec, {"seed": 7}, arrays["train_inputs"].astype(np.int64))
    tokens = arrays["eval_inputs"].astype(np.int32)
    logits = ref.reference_logits(spec, weights, tokens)
    max_gap = float(task.inference["fidelity"]["reference"]["max_gap"])
    document = ref.document(task.id, ref.masked_positions(tokens), logits, len(tokens), max_gap, "0" * 64)
    return Rig(task.id, spec, weights, {"tokens": tokens}, parsed(document), {"predict_argmax": True})


def dlrm_rig(samples: int = 1024) -> Rig:
    """MLPerf's DLRM at every width, each table capped at 512 rows."""
    from levelfield.reference.ctr_dlrm.common.numpy_forward import forward
    from levelfield.reference.ctr_dlrm_standard.common import fidelity_reference as ref
    from levelfield.reference.ctr_dlrm_standard.common.model_spec import SPEC

    spec = SPEC.with_rows(512)
    task = load_suite(RULES_VERSION).task("ctr-dlrm-standard")
    dataset, inputs = task_module(task, "dataset"), task_module(task, "inputs")
    params = {**task.dataset["params"], "cardinalities": list(spec.cardinalities)}
    arrays = dataset.generate({**params, "train_samples": 1024, "eval_samples": samples})
    train, evaluate = inputs.model_inputs(arrays, "train"), inputs.model_inputs(arrays, "eval")
    weights = ref.generate_for(spec, {"seed": 7}, train["dense"], train["sparse"])
    logits = forward(spec, weights, evaluate["dense"], evaluate["sparse"])
    return Rig(task.id, spec, weights, evaluate, parsed(ref.document(task.id, logits, "0" * 64)))


def full_order(task_id: str) -> list[str]:
    return parameter_order(load_suite(RULES_VERSION).task(task_id))
