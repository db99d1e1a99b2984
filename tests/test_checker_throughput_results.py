"""Rules 1.2 training-throughput results of every standard task at unit level: the throughput checks (TRN024,
TRN027-TRN031, and TRN015: a plant must not turn the clock back) and the leaderboard's throughput table on
logs written as the trainer writes them.

test_throughput_results.py trains one standard task in every framework end to end; training the others here
would cost minutes a run. So their logs come from tests/throughput_plants.py's `write_throughput_log` (the
trainer's RunLog and Throughput, on a clock that advances a set time per step), three repeats per framework,
each framework at its own speed; the checks run selected (the other codes read keys these logs leave out).
Each check has its passing case (the honest tree) and its failing one (a planted edit) for every standard task.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from levelfield.checker.engine import check_tree
from levelfield.ground import mllog_keys as LK
from levelfield.ground.validation import validate
from levelfield.rules import load_suite
from tests.submission_edit import edit_mllog, reseal, set_value
from tests.throughput_plants import forge_consistently, scale_figure, squeeze_windows, write_throughput_log

SUITE = load_suite("1.2")
STANDARD = [t for t in SUITE.tasks if SUITE.task(t).size_class == "standard"]
FRAMEWORKS = list(SUITE.frameworks)
CODES = ["TRN015", "TRN024", "TRN027", "TRN028", "TRN029", "TRN030", "TRN031"]
# Seconds per step of each framework (a step of PyTorch 4% faster than TensorFlow's, JAX's 30% slower), each
# repeat 2% slower than the one before it: spread enough for a CI and a Welch mark each way.
STEP_S = {"pytorch": 0.048, "tensorflow": 0.050, "jax": 0.065}


def make_tree(root: Path, tasks: list[str], rules_version: str = "1.2", profile: str = "smoke") -> Path:
    (root / "closed/acme/code").mkdir(parents=True)
    (root / "closed/acme/code/levelfield.json").write_text(json.dumps({"rules_version": rules_version}))
    for task in tasks:
        for framework in FRAMEWORKS:
            folder = root / f"closed/acme/results/box/{task}/{framework}/throughput"
            folder.mkdir(parents=True)
            for i in range(3):
                log = folder / f"result_{i}.txt"
                step_s = STEP_S[framework] * (1 + 0.02 * i)
                write_throughput_log(log, task, framework=framework, index=i, seed=i, step_s=step_s, profile=profile)
    reseal(root)  # a MANIFEST: what makes it a levelfield tree for the leaderboard (the checks selected skip it)
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return make_tree(tmp_path_factory.mktemp("tput") / "sub", STANDARD)


def findings(root: Path, profile: str = "smoke", codes: list[str] = CODES) -> list:
    return check_tree(root, select=codes, profile=profile).active


def _log(root: Path, task: str, framework: str = "pytorch", i: int = 0) -> Path:
    return root / f"closed/acme/results/box/{task}/{framework}/throughput/result_{i}.txt"


def test_every_standard_task_has_throughput_rules_and_its_honest_logs_check_clean(tree):
    assert STANDARD == ["ctr-dlrm-standard", "seq-transformer-standard", "image-resnet50-standard"]
    assert findings(tree) == []


@pytest.mark.parametrize("task", STANDARD)
@pytest.mark.parametrize(
    "plant, code, says",
    [
        (lambda log: scale_figure(log, 3), "TRN027", "is above what the log's own step windows give"),
        (lambda log: scale_figure(log, 1 / 3), "TRN027", "is below what the log's own step windows give"),
        (lambda log: squeeze_windows(log, 3, readings=False), "TRN028", "time_ms disagrees with its clock reading"),
        (lambda log: squeeze_windows(log, 3, readings=True), "TRN027", "is below what the log's own step windows"),
        (lambda log: edit_mllog(log, LK.THROUGHPUT_ONLY, set_value(2)), "TRN029", "other timed steps"),
        (
            lambda log: edit_mllog(log, "run_stop", lambda e: {**e, "metadata": {**e["metadata"], "reason": "error"}}),
            "TRN029",
            "did not finish its steps",
        ),
        (lambda log: log.unlink(), "TRN030", "number of repeats"),
    ],
    ids=["tripled", "down", "squeezed-stamps", "squeezed-readings", "timed-steps", "unfinished", "two-repeats"],
)
def test_a_planted_log_gives_its_code(tree, tmp_path, task, plant, code, says):
    copy = shutil.copytree(tree, tmp_path / "sub")
    plant(_log(copy, task))
    found = findings(copy)
    assert {f.code for f in found} == {code}
    assert any(says in f.message for f in found), [f.message for f in found]


@pytest.mark.parametrize("task", STANDARD)
def test_a_batch_size_outside_the_rules_gives_trn031(tmp_path, task):
    root = make_tree(tmp_path / "sub", [task])
    for log in sorted(root.rglob("pytorch/throughput/result_*.txt")):
        edit_mllog(log, "global_batch_size", set_value(3))
        # An honest run at batch 3: its figure is 3 samples a step, not the rules' batch.
        edit_mllog(log, LK.TRAIN_SAMPLES_PER_S, lambda e: {**e, "value": e["value"] * 3 / _batch(task)})
    assert {f.code for f in findings(root)} == {"TRN031"}


def _batch(task: str) -> int:
    t = SUITE.task(task).for_profile("smoke")
    return t.training.get("global_batch_size", t.hyperparameters["tunable"]["global_batch_size"]["default"])


def test_a_consistent_forgery_passes_the_log_checks(tree, tmp_path):
    """docs/audit.md: readings, time_ms and figures forged together leave nothing in the log to disagree;
    `levelfield reproduce` catches it (test_throughput_results.py)."""
    copy = shutil.copytree(tree, tmp_path / "sub")
    for log in sorted(copy.rglob("pytorch/throughput/result_*.txt")):
        forge_consistently(log, 3)
    assert findings(copy) == []


def test_trn024_where_a_throughput_log_is_no_result(tree, tmp_path):
    # Checked as a submission, a smoke run's throughput is no result (its steps are no longer the rules', too).
    assert "TRN024" in {f.code for f in findings(tree, profile="submission")}
    # Under rules without throughput results (1.1), a throughput/ folder is none.
    old = make_tree(tmp_path / "old", ["ctr-dlrm-standard"], rules_version="1.1")
    found = findings(old, codes=["TRN024"])
    assert len(found) == 9 and all("rules 1.1 have no training-throughput results" in f.message for f in found)


def test_the_leaderboard_ranks_every_standard_task_in_a_throughput_table(tree):
    from levelfield.tools.leaderboard import render
    from levelfield.tools.leaderboard.collect import collect
    from levelfield.tools.leaderboard.document import build_document

    def selected(path, **kwargs):
        return check_tree(path, select=CODES, **kwargs)

    doc = build_document(collect([tree], profile="smoke", check=selected))
    validate(doc, "leaderboard", "leaderboard.json")
    assert doc["training"] == [] and len(doc["throughput"]) == 3 * len(STANDARD)
    for task in STANDARD:
        rows = {r["framework"]: r for r in doc["throughput"] if r["task"] == task}
        assert [r["framework"] for r in doc["throughput"] if r["task"] == task] == ["pytorch", "tensorflow", "jax"]
        for framework, row in rows.items():
            figures = row["train_samples_per_s"]
            assert figures["n"] == 3 and figures["ci95_low"] < figures["mean"] < figures["ci95_high"]
            # The mean of the repeats' figures, each global batch over its step time.
            expected = [_batch(task) / (STEP_S[framework] * (1 + 0.02 * i)) for i in range(3)]
            assert figures["mean"] == pytest.approx(sum(expected) / 3, rel=1e-4)  # readings near 1.8e9 s: ~1e-7 s
        assert rows["pytorch"]["vs_fastest"] == {"fastest": True}
        assert rows["jax"]["vs_fastest"]["within_noise"] is False  # 30% slower, 2% spread: beyond noise
        assert rows["tensorflow"]["vs_fastest"]["framework"] == "pytorch"
    md, csv_text, html = (render(doc, fmt) for fmt in ("md", "csv", "html"))
    for task in STANDARD:
        section = md.split(f"## {task} ")[1].split("\n## ")[0]
        assert "### Training throughput (samples/s; not a time to train)" in section
        assert "### Training: time to" not in section
    assert csv_text.count("\ntraining-throughput,") == 3 * len(STANDARD)
    assert html.count('<table id="throughput-') == len(STANDARD)


def test_a_rules_1_2_time_to_train_log_is_judged_by_its_windows_too(tmp_path):
    """Every 1.2 log has step windows, so a time-to-train log's samples/s (shown beside its time to train) is
    recomputed at any run length: tripled, it is TRN027 however short the run (TRN023 could not judge it)."""
    root = make_tree(tmp_path / "sub", ["ctr-dlrm-standard"])
    results = root / "closed/acme/results/box/ctr-dlrm-standard/pytorch"
    (results / "throughput").rename(results / "training")
    assert findings(root, codes=["TRN027", "TRN028"]) == []
    scale_figure(results / "training/result_0.txt", 3)
    (found,) = findings(root, codes=["TRN027", "TRN028"])
    assert found.code == "TRN027" and "training/result_0.txt" in found.path


@pytest.mark.parametrize(
    "old, new, says",
    [
        ("  timed_steps: 50\n", "  timed_steps: 600\n", "timed steps found / expected at most 64"),
        ("global_batch_sizes: [2048, 16384]", "global_batch_sizes: [2048, 3000]", "3000 found / expected a global"),
        ("  repeats: 3 ", "  repeats: 2 ", "repeats"),  # the schema's minimum: at least 3
    ],
    ids=["steps-past-a-full-run", "batch-size-not-tunable", "two-repeats"],
)
def test_the_rules_loader_refuses_throughput_rules_that_cannot_hold(rules_copy, old, new, says):
    from levelfield.ground.errors import UserError

    task_file = rules_copy / "1.2" / "tasks" / "ctr-dlrm-standard.yaml"
    text = task_file.read_text()
    assert text.count(old) == 1
    task_file.write_text(text.replace(old, new))
    with pytest.raises(UserError, match="ctr-dlrm-standard.yaml") as error:
        load_suite("1.2", rules_copy)
    assert says in str(error.value) and "throughput" in str(error.value)
