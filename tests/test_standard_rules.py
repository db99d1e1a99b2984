"""Size classes in the rules (docs/scale.md) and the first standard-size task, ctr-dlrm-standard.

Rules 1.1 gives every task a family and a size class; 1.0 has neither and loads unchanged (all
tiny). A standard task's numbers are data: its model's parameter count follows from the shapes in
its rules, its capped tables from MLPerf's, and its target stays provisional until calibrated on an
accelerator, which the checker enforces (TRN025; fixture: tests/provisional_plants.py).
"""

from __future__ import annotations

import re

import pytest

from conftest import assert_user_error, run_cli
from levelfield.ground.errors import UserError
from levelfield.ground.registry import task_module
from levelfield.rules import load_suite
from levelfield.rules.loader import available_versions, rules_root

STANDARD = "ctr-dlrm-standard"


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
    assert [t.id for t in standard] == [STANDARD]
    for task in standard:
        assert task.quality["provisional"] is True and task.inference["reference_value_provisional"] is True
        assert task.reference_convergence is None


def test_parameter_count_from_shapes_is_the_rules_model_parameters():
    """Counted from the spec's shapes (nothing allocated: the full model is 1.07 GiB)."""
    for version, task_id in (("1.1", STANDARD), ("1.1", "ctr-dlrm"), ("1.0", "ctr-dlrm")):
        task = load_suite(version).task(task_id)
        spec = task_module(task, "model_spec").SPEC
        assert spec.__class__.from_task(task) == spec  # the module's spec is the rules'
        assert spec.trainable_count() == task.model["parameters"], (version, task_id)
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
