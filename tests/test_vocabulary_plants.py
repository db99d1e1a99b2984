"""The vocabulary checks of tests/test_vocabulary.py catch what they should: each mistake planted in a copy of
reference/ (and the registry's task-id converter) gives its finding.

    .venv/bin/python -m pytest tests/test_vocabulary_plants.py -q
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from test_vocabulary import CONVERTER, ROOT, converter_findings, shim_findings, vocabulary_findings


# -- the checks catch what they should: planted in a copy ---------------------------------------------------
@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of reference/ (and the registry) to plant mistakes in."""
    shutil.copytree(ROOT / "reference", tmp_path / "reference", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "levelfield" / "ground").mkdir(parents=True)
    shutil.copy(ROOT / CONVERTER, tmp_path / CONVERTER)
    return tmp_path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def add_method(path: Path, source: str) -> None:
    """Append a method to the module's class Implementation."""
    lines = path.read_text().splitlines()
    cls = next(
        n for n in ast.parse("\n".join(lines)).body if isinstance(n, ast.ClassDef) and n.name == "Implementation"
    )
    lines[cls.end_lineno : cls.end_lineno] = ["", *("    " + line for line in source.strip().splitlines())]
    path.write_text("\n".join(lines) + "\n")


def test_a_planted_misspelling_of_a_role_fails(tree):
    path = tree / "reference" / "fmnist_resnet" / "tensorflow" / "implementation.py"
    edit(path, "def _new_optimizer", "def _reset_optimizer")
    found = "\n".join(vocabulary_findings(tree))
    assert "fmnist_resnet/tensorflow/implementation.py" in found
    assert "`_reset_optimizer` (method) is not in the vocabulary" in found


def test_a_planted_misspelling_in_a_framework_base_fails(tree):
    edit(tree / "reference" / "frameworks" / "tensorflow" / "base.py", "_new_optimizer", "_reset_optimizer")
    found = "\n".join(vocabulary_findings(tree))
    assert "frameworks/tensorflow/base.py" in found and "`_reset_optimizer` (method) is no tensorflow role" in found
    assert "no `_new_optimizer`, which ROLES puts in the tensorflow base" in found
    # Only fmnist-resnet overrides it: the other TensorFlow implementations lose the role with the base's.
    assert "ctr_dlrm/tensorflow/implementation.py: no `_new_optimizer`, which every tensorflow implementation" in found


def test_a_planted_use_of_a_name_no_role_has_in_a_base_fails(tree):
    edit(tree / "reference" / "frameworks" / "pytorch" / "base.py", "self._loss,", "self._losses,")
    assert any("`self._losses` is used but is no pytorch role" in f for f in vocabulary_findings(tree))


def test_a_planted_old_spelling_is_named_as_such(tree):
    add_method(
        tree / "reference" / "fmnist_resnet" / "pytorch" / "implementation.py", "def _optimizer(self):\n    pass"
    )
    found = "\n".join(vocabulary_findings(tree))
    assert (
        "`_optimizer` (method) is not in the vocabulary (the optimizer" in found
        and "is `_build_optimizer` now" in found
    )


def test_a_planted_jax_step_as_a_method_fails(tree):
    add_method(tree / "reference" / "ctr_dlrm" / "jax" / "implementation.py", "def _train_step(self, state):\n    pass")
    found = vocabulary_findings(tree)
    assert any("`_train_step` is a method here; in jax it is a module-level function" in f for f in found), found


def test_a_planted_role_of_another_framework_fails(tree):
    add_method(tree / "reference" / "seq_transformer" / "jax" / "implementation.py", "def _loss(self, rows):\n    pass")
    assert any("`_loss` is a role of pytorch only" in f for f in vocabulary_findings(tree))


def test_a_planted_use_of_a_name_nobody_sets_fails(tree):
    path = tree / "reference" / "image_resnet50_standard" / "pytorch" / "implementation.py"
    edit(path, "with torch.inference_mode(), self._autocast:", "with torch.inference_mode(), self._autocasts:")
    assert any("`self._autocasts` is used but neither" in f for f in vocabulary_findings(tree))


def test_a_planted_loop_of_its_own_fails(tree):
    path = tree / "reference" / "image_resnet50_standard" / "jax" / "implementation.py"
    edit(path, "self.state, losses = run_steps(", "self.state, losses = my_loop(")
    assert any(
        "image_resnet50_standard/jax/implementation.py: train_steps does not call run_steps" in f
        for f in vocabulary_findings(tree)
    )


def test_a_planted_re_export_shim_fails(tree):
    shim = tree / "reference" / "ctr_dlrm_standard" / "common" / "metric.py"
    shim.write_text(
        '"""ctr-dlrm\'s metric."""\n\nfrom levelfield.reference.ctr_dlrm.common.metric import score  # noqa: F401\n'
    )
    renamed = tree / "reference" / "seq_transformer_standard" / "jax" / "model.py"
    renamed.write_text(
        "from levelfield.reference.seq_transformer.jax.model import EncoderSmall\n\n\n"
        "def EncoderStandard(shapes):\n    return EncoderSmall(shapes)\n"
    )
    found = "\n".join(shim_findings(tree))
    assert "ctr_dlrm_standard/common/metric.py: only re-exports" in found
    assert "seq_transformer_standard/jax/model.py: only re-exports" in found


def test_a_planted_second_converter_fails(tree):
    (tree / "tests").mkdir()
    (tree / "tests" / "test_x.py").write_text('PACKAGE = "ctr-dlrm".replace' + '("-", "_")\n')  # split: not here
    assert converter_findings(tree) == [
        "tests/test_x.py: converts a task id to a package itself; ask registry.task_package"
    ]


def test_a_planted_training_role_in_an_inference_only_framework_fails(tree):
    path = tree / "reference" / "ctr_dlrm" / "onnxruntime" / "implementation.py"
    add_method(path, "def _build_loss(self, recipe):\n    pass")
    assert any("`_build_loss` is a role of pytorch, tensorflow, jax only" in f for f in vocabulary_findings(tree))


def test_a_planted_misspelled_forward_of_an_inference_only_framework_fails(tree):
    base = tree / "reference" / "frameworks" / "onnxruntime" / "base.py"
    base.write_text(base.read_text().replace("self._forward", "self._run"))
    found = "\n".join(vocabulary_findings(tree))
    assert "frameworks/onnxruntime/base.py" in found and "`_run` (attribute) is no onnxruntime role" in found
    assert "no `_forward`, which ROLES puts in the onnxruntime base" in found
    # Every ONNX Runtime implementation inherits the session's run from the base, and now lacks it.
    assert "seq_transformer/onnxruntime/implementation.py: no `_forward`, which every onnxruntime" in found
    assert "seq_transformer/onnxruntime/implementation.py:" in found and "`self._forward` is used but" in found


def test_a_later_framework_is_read_and_must_state_its_forms(tree):
    """A framework's folder the table has no forms for fails until ROLES gives them (the vocabulary is the same)."""
    later = tree / "reference" / "ctr_dlrm" / "mxnet"
    later.mkdir()
    shutil.copy(tree / "reference" / "ctr_dlrm" / "pytorch" / "implementation.py", later / "implementation.py")
    found = [f for f in vocabulary_findings(tree) if "ctr_dlrm/mxnet/" in f]
    assert any("`_build_model` is a role of pytorch, tensorflow, jax, onnxruntime only" in f for f in found), found
