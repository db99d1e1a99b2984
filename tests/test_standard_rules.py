"""Size classes in the rules (docs/scale.md) and the standard-size tasks (ctr-dlrm-standard, seq-transformer-standard)

Rules 1.1 gives every task a family and a size class; 1.0 has neither and loads unchanged (all
tiny). A standard task's numbers are data: its model's parameter count follows from the shapes in
its rules, its capped tables from MLPerf's, and its target stays provisional until calibrated on an
accelerator, which the checker enforces (TRN025; fixture: tests/provisional_plants.py).
"""

from __future__ import annotations

import re

import pytest

from conftest import assert_user_error, example_rules_version, run_cli
from levelfield.checker.engine import check_tree
from levelfield.ground.errors import UserError
from levelfield.ground.registry import task_module
from levelfield.reference.interface import Recipe
from levelfield.rules import load_suite
from levelfield.rules.loader import available_versions, newest_task, rules_root
from tests.submission_edit import copy_tree, edit_mllog, files, reseal, set_value
from tests.test_checker_fixtures import EXAMPLE

STANDARD = "ctr-dlrm-standard"
STANDARD_SEQ = "seq-transformer-standard"
STANDARD_IMAGE = "image-resnet50-standard"  # its own tests: tests/test_image_standard.py


def edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"fixture text {old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_rules_1_0_loads_unchanged_every_task_tiny_and_no_family():
    suite = load_suite("1.0")
    assert list(suite.tasks) == ["fmnist-resnet", "seq-transformer", "ctr-dlrm"]
    assert {(t.size_class, t.family) for t in suite.tasks.values()} == {("tiny", None)}


def test_rules_1_1_classes_every_task_and_each_family_has_a_tiny_one():
    tasks = load_suite("1.1").tasks
    assert {t.id: (t.family, t.size_class) for t in tasks.values()} == {
        "fmnist-resnet": ("image-classification", "tiny"),
        "seq-transformer": ("sequence-encoder", "tiny"),
        "ctr-dlrm": ("recommendation", "tiny"),
        STANDARD: ("recommendation", "standard"),
        STANDARD_SEQ: ("sequence-encoder", "standard"),
        STANDARD_IMAGE: ("image-classification", "standard"),
    }


def test_every_standard_task_of_every_version_is_provisional():
    """What TRN025 relies on: until calibrated on an accelerator, no standard task has a target that
    the checker would accept as a time-to-accuracy result."""
    standard = [
        task
        for version in available_versions(rules_root())
        for task in load_suite(version).tasks.values()
        if task.size_class == "standard"
    ]
    per_version = [STANDARD, STANDARD_SEQ, STANDARD_IMAGE]
    assert sorted(t.id for t in standard) == sorted(per_version * (len(standard) // len(per_version)))
    for task in standard:
        assert task.quality["provisional"] is True and task.inference["reference_value_provisional"] is True
        assert task.reference_convergence is None


@pytest.mark.parametrize(
    "version, task_id",
    [
        ("1.1", STANDARD),
        ("1.1", "ctr-dlrm"),
        ("1.0", "ctr-dlrm"),
        ("1.1", STANDARD_SEQ),
        ("1.1", "seq-transformer"),
        ("1.0", "seq-transformer"),
    ],
)
def test_a_spec_is_its_rules_and_counts_their_model_parameters(version, task_id):
    """The module's spec is the one its rules describe, in both versions, and counts the rules' model.parameters
    from its shapes (nothing allocated: the standard models are 1.07 and 0.49 GiB)."""
    task = load_suite(version).task(task_id)
    spec = task_module(task, "model_spec").SPEC
    assert spec.__class__.from_task(task) == spec
    assert spec.trainable_count() == task.model["parameters"]


def test_dlrm_standard_counts_mlperf_dlrm_s_parameters():
    spec = task_module(STANDARD, "model_spec").SPEC
    assert spec.trainable_count() == 286_313_473 and spec.top_input == 479 and spec.num_fields == 26


def test_standard_tables_are_mlperf_s_capped_at_2_18_rows():
    arch = load_suite("1.1").task(STANDARD).model["architecture"]
    rows = task_module(STANDARD, "model_spec").SPEC.cardinalities
    assert arch["max_table_rows"] == 2**18 and len(arch["source_cardinalities"]) == 26
    assert list(rows) == [min(r, 2**18) for r in arch["source_cardinalities"]]
    assert sum(r == 2**18 for r in rows) == 8


def test_table_rows_that_are_not_the_capped_source_are_refused(rules_copy):
    path = rules_copy / "1.1" / "tasks" / f"{STANDARD}.yaml"
    edit(path, "cardinalities: [262144, 39043,", "cardinalities: [262145, 39043,")
    with pytest.raises(UserError, match=r"\$\.dataset\.params\.cardinalities: found \[262145, 39043"):
        load_suite("1.1", rules_dir=rules_copy)


def test_an_unknown_size_class_is_refused_in_one_line(rules_copy):
    edit(rules_copy / "1.1" / "tasks" / f"{STANDARD}.yaml", "size_class: standard", "size_class: huge")
    result = run_cli("rules", "validate", "--rules-version", "1.1", "--rules-dir", str(rules_copy))
    assert_user_error(result, "$.size_class")


def test_the_1_1_mllog_ruleset_names_every_1_1_task_as_a_benchmark():
    """mlperf_logging's compliance checker reads submission_benchmark's allowed values from this file:
    a task missing there fails every one of its training logs (peer_compliance NO)."""
    suite = load_suite("1.1")
    ruleset = (suite.path / "mllog" / "training.yaml").read_text()
    allowed = re.search(r"submission_benchmark\n.*\n\s*CHECK: \" v\['value'\] in \[([^\]]*)\]", ruleset)
    assert allowed, "no submission_benchmark CHECK in the 1.1 ruleset"
    assert sorted(name.strip(" '") for name in allowed.group(1).split(",")) == sorted(suite.tasks)


def test_rules_show_gives_each_task_s_size_class():
    result = run_cli("rules", "show", "--rules-version", "1.1")
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith(f"| {STANDARD} "))
    assert "| standard " in row and "286,313,473" in row and "0.8025*" in row
    detail = run_cli("rules", "show", "--rules-version", "1.1", "--task", STANDARD)
    assert "(recommendation, size class standard)" in detail.stdout.splitlines()[0]


def test_seq_standard_has_bert_base_s_encoder_sizes():
    """BERT-base's encoder sizes counted from the spec's shapes."""
    spec = task_module(STANDARD_SEQ, "model_spec").SPEC
    assert (spec.num_layers, spec.d_model, spec.num_heads, spec.ff_dim) == (12, 768, 12, 3072)
    assert (spec.vocab_size, spec.seq_len, spec.head_dim) == (30522, 128, 64)
    head = 768 * 30522 + 30522  # untied per-position head; without it, BERT-base's ~110M at 128 positions
    assert spec.trainable_count() == 132_066_618 and spec.trainable_count() - head == 108_595_200


def test_an_architecture_of_neither_kind_is_refused_in_one_line(rules_copy):
    edit(rules_copy / "1.1" / "tasks" / f"{STANDARD_SEQ}.yaml", "    ff_dim: 3072\n", "")
    result = run_cli("rules", "validate", "--rules-version", "1.1", "--rules-dir", str(rules_copy))
    assert_user_error(result, "$.model.architecture")


def test_the_linear_schedule_warms_up_then_decays_to_zero_as_bert_s():
    from levelfield.reference.interface import Recipe
    from levelfield.reference.schedule import learning_rates

    recipe = Recipe.from_task(load_suite("1.1").task(STANDARD_SEQ))  # peak 1e-4, 1 warm-up epoch
    lrs = learning_rates(recipe, steps_per_epoch=4, epochs=3)
    expected = [0.25, 0.5, 0.75, 1.0, 1.0, 0.875, 0.75, 0.625, 0.5, 0.375, 0.25, 0.125]
    assert lrs == pytest.approx([1e-4 * f for f in expected], rel=1e-12)


def test_a_standard_task_is_read_from_the_newest_rules_that_have_it():
    """The standard tasks' model specs read their rules through newest_task, whichever version is the
    default; a task no version has is named in the error."""
    assert newest_task("ctr-dlrm-standard").path.parent.parent.name == available_versions(rules_root())[-1]
    with pytest.raises(UserError, match="no rules version has task 'no-such-task'"):
        newest_task("no-such-task")


# --- a non-submittable profile's own global batch (rules 1.1: the standard tasks' smoke runs) ------------


def test_a_smoke_profile_s_batch_is_the_recipe_s_default_there_only():
    task = load_suite("1.1").task(STANDARD_SEQ)
    smoke_batch = task.profiles["smoke"]["training"]["global_batch_size"]
    assert Recipe.from_task(task.for_profile("smoke")).global_batch_size == smoke_batch
    assert Recipe.from_task(task.for_profile("submission")).global_batch_size == 256  # the tunable's default
    assert Recipe.from_task(task.for_profile("smoke"), global_batch_size=64).global_batch_size == 64  # --set wins


def test_a_batch_larger_than_the_profile_s_training_rows_is_one_line(tmp_path):
    """seq-transformer-standard's smoke profile trains on 8 rows: its recipe's 256 leaves an epoch no step."""
    rows = load_suite("1.1").task(STANDARD_SEQ).for_profile("smoke").train_samples
    result = run_cli(
        *("train", "--task", STANDARD_SEQ, "--framework", "jax", "--profile", "smoke", "--rules-version", "1.1"),
        *("--set", "global_batch_size=256", "--out", str(tmp_path / "run")),
    )
    assert_user_error(
        result, f"seq-transformer-standard.yaml: global_batch_size 256 found, expected <= {rows} training"
    )
    assert not (tmp_path / "run").exists()


def test_a_submittable_profile_may_not_set_its_own_batch(rules_copy):
    path = rules_copy / "1.1/tasks/ctr-dlrm.yaml"
    edit(path, "    training: {}\n", "    training: {global_batch_size: 7}\n")  # the submission profile's, the last
    assert_user_error(
        run_cli("rules", "validate", "--rules-version", "1.1", "--rules-dir", str(rules_copy)),
        "$.profiles.submission: a submittable profile may not override training.global_batch_size",
    )


def test_trn008_accepts_a_profile_s_own_batch_under_that_profile(rules_copy, tmp_path):
    """The example (ctr-dlrm) logging batch 100, a size no choice offers: refused under the shipped rules'
    smoke profile, accepted where that profile sets it (a rules copy of the example's version)."""
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    for log in [p for p in files(tree) if p.parent.name == "training" and p.name.startswith("result_")]:
        edit_mllog(log, "global_batch_size", set_value(100))
    reseal(tree)
    smoke = "training: {max_epochs: 1, runs: 1, train_samples: 4096, eval_samples: 1024}"
    edit(
        rules_copy / example_rules_version() / "tasks/ctr-dlrm.yaml",
        smoke,
        smoke.replace("}", ", global_batch_size: 100}"),
    )

    def trn008(rules_dir: str | None) -> list:
        return [f for f in check_tree(tree, rules_dir=rules_dir, profile="smoke").active if f.code == "TRN008"]

    assert trn008(None) and all("tunable hyperparameter global_batch_size" in f.text() for f in trn008(None))
    assert trn008(str(rules_copy)) == []
