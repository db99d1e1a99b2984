"""The demo (README command 1) runs the whole chain and never writes into a folder it did not make.

The full demo (three frameworks, the rules' demo profile) takes about ten
minutes; here it runs for one training framework and ONNX Runtime (rules 1.2,
inference only, serving the weights the training framework saved) with a
shortened copy of the demo profile, which exercises every step: data, system,
train, the four LoadGen scenarios in both modes, package, check, leaderboard.
"""

from __future__ import annotations

import json
import re
import shutil

import jsonschema
import pytest
import yaml

from conftest import REPO, assert_user_error, run_cli

# Short enough for the test suite, long enough for LoadGen's early stopping at the 99th percentile
# (its minimum query count stays the demo's). The target is one any run reaches: 4 steps teach nothing.
SHORT_DEMO = {
    "training": {"max_epochs": 1, "runs": 1, "train_samples": 1024, "eval_samples": 256},
    "throughput": {"warmup_steps": 1, "timed_steps": 2},  # within the 4 steps of that run (rules 1.2)
    "quality": {"target": 0.01},
    "inference": {"reference_value": 0.01},
}


# The demo's rules version: 1.2, the first that names onnxruntime (for inference), so the one run shows a
# training framework and the inference-only one serving its weights.
RULES_VERSION = "1.2"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One short demo run (JAX: the quickest framework to import; ONNX Runtime serving the weights JAX
    trained); its output folder and CLI result."""
    root = tmp_path_factory.mktemp("demo")
    rules = root / "rules"
    shutil.copytree(REPO / "rules", rules, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    task_file = rules / RULES_VERSION / "tasks" / "fmnist-resnet.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["profiles"]["demo"].update(SHORT_DEMO)  # LoadGen's runs stay the demo's: they must be VALID here
    task_file.write_text(yaml.safe_dump(task, sort_keys=False))
    out = root / "out"
    result = run_cli(
        *("demo", "--out", str(out), "--frameworks", "onnxruntime", "jax", "--rules-dir", str(rules)),
        *("--rules-version", RULES_VERSION),
        timeout_s=900,
    )
    return out, rules, result


def test_demo_runs_every_step_and_ends_with_the_leaderboard(demo_run):
    out, _, result = demo_run
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    stdout = result.stdout
    for banner in ("datasets", "system description", "jax: train", "package", "check", "leaderboard"):
        assert banner in stdout, banner
    # Training frameworks first, whatever order --frameworks gave; onnxruntime trains nothing.
    assert stdout.index("jax: train") < stdout.index("onnxruntime: 4 LoadGen scenarios x 2 modes, serving the weights")
    assert "[onnxruntime] train" not in stdout
    for framework in ("jax", "onnxruntime"):
        for scenario in ("singlestream", "multistream", "server", "offline"):
            assert f"[{framework}] {scenario} performance:" in stdout, (framework, scenario)
            line = next(x for x in stdout.splitlines() if f"[{framework}] {scenario} performance:" in x)
            # A run the other tests' load broke is sized again and says so (docs/inference.md): VALID either way.
            assert re.search(r", VALID(, sized again \d+x after the host's load rose)? \(", line), line
            assert "3 runs:" in line and "95% CI" in line, line
            line = next(x for x in stdout.splitlines() if f"[{framework}] {scenario} accuracy:" in x)
            assert ") pass (" in line, line
    # Exit 0: no error finding (a modified checkout's REP003 warning may show while developing).
    assert "judged as the demo profile (not results)" in stdout
    # The printed Markdown is the leaderboard file, and the run ends by naming the HTML page.
    markdown = (out / "leaderboard.md").read_text()
    assert markdown.strip() in stdout
    assert "not results" in markdown and "| jax " in markdown
    assert str(out / "leaderboard.html") in stdout.splitlines()[-1]


def test_demo_leaderboard_says_demo_in_every_format(demo_run):
    out, _, _ = demo_run
    doc = json.loads((out / "leaderboard.json").read_text())
    schema = json.loads((REPO / "rules" / "schemas" / "leaderboard.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["profile"] == "demo" and not doc["excluded"]
    assert [row["framework"] for row in doc["training"]] == ["jax"]
    assert sorted(row["framework"] for row in doc["inference"]) == ["jax", "onnxruntime"]  # inference: both
    assert set(doc["inference"][0]["scenarios"]) == {"singlestream", "multistream", "server", "offline"}
    assert 'id="not-results"' in (out / "leaderboard.html").read_text()
    assert all(line.split(",")[1] == "demo" for line in (out / "leaderboard.csv").read_text().splitlines()[1:])


def test_demo_tree_is_not_a_submission(demo_run):
    """Judged as a submission (the default), the demo's tree fails: wrong profile (TRN010), LoadGen runs
    asked for the demo's run lengths (INF011) and Server's demo bound of 200 ms (INF014)."""
    out, rules, _ = demo_run
    result = run_cli("check", str(out / "submission"), "--rules-dir", str(rules), "--format", "json")
    assert result.returncode == 1, result.stderr
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert {"TRN010", "INF011", "INF014"} <= codes
    board = run_cli("leaderboard", str(out / "submission"), "--rules-dir", str(rules), "--format", "json")
    assert board.returncode == 0, board.stderr
    assert json.loads(board.stdout)["excluded"][0]["codes"].keys() >= {"TRN010", "INF011", "INF014"}


def test_demo_refuses_a_folder_it_did_not_make(tmp_path):
    precious = tmp_path / "my-submission"
    precious.mkdir()
    (precious / "notes.txt").write_text("mine")
    assert_user_error(run_cli("demo", "--out", str(precious)), "was not made by `levelfield demo`")
    assert [p.name for p in precious.iterdir()] == ["notes.txt"]


def test_demo_reports_missing_data(tmp_path):
    result = run_cli("demo", "--out", str(tmp_path / "d"), "--data-dir", str(tmp_path / "no-data"))
    assert_user_error(result, "no-data", "dataset-fashion-mnist")


def test_demo_refuses_an_unknown_framework(tmp_path):
    assert_user_error(run_cli("demo", "--out", str(tmp_path / "d"), "--frameworks", "mxnet"), "mxnet", "pytorch")


def test_demo_refuses_an_inference_only_framework_alone(tmp_path):
    result = run_cli(
        *("demo", "--out", str(tmp_path / "d"), "--frameworks", "onnxruntime", "--rules-version", RULES_VERSION)
    )
    assert_user_error(result, "each serves inference only; name a training framework too")
    assert not (tmp_path / "d").exists()
