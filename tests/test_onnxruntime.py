"""ONNX Runtime, the inference-only fourth framework (rules 1.2): LoadGen runs, the served model file, refusals.

    .venv/bin/python -m pytest tests/test_onnxruntime.py -q

Per tiny task, one implementation is built once (a shared fixture) and runs
LoadGen's four scenarios in performance mode (each VALID at the smoke profile)
and in accuracy mode, in this process. Its logged responses are PyTorch's on
the same weights (eager PyTorch: the same numbers as compiled, without its
compilation's time), and accuracy mode passes against a reference value that
is PyTorch's own score on those weights: a rules copy sets the smoke profile's
`inference.reference_value` to it, since untrained weights reach no shipped
reference (tests/test_demo.py lowers its copy's likewise); the rules' accuracy
ratio then asks ONNX Runtime for at least 99% of what the reference
implementation scores. Each standard task gets one Offline smoke run through
the CLI at full size; one CLI run shows that serving imports no other
framework. The equivalence of outputs per task lives in
tests/test_equivalence_*.py. About 2 minutes on the 2-core CPU, most of it
the standard tasks' model files (init_weights, hashing, writing).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml
from test_runner import check_performance_result
from test_runner_matrix import FAST_SERVER_ACCURACY, SCENARIOS, assert_rows_match

from conftest import REPO, assert_user_error, run_cli
from levelfield.checker.context import Context
from levelfield.checker.engine import run_check
from levelfield.ground.accuracy import read_accuracy_log
from levelfield.ground.errors import UserError
from levelfield.ground.registry import load_implementation, task_module
from levelfield.ground.submission.loader import load_submission
from levelfield.ground.submission.tree import read_tree
from levelfield.harness.options import InferOptions
from levelfield.harness.runner import infer
from levelfield.reference.datasets import load_dataset
from levelfield.reference.interface import EAGER, Recipe
from levelfield.reference.schedule import batch_order
from levelfield.reference.weights import save_weights
from levelfield.rules import load_suite
from tests.test_checker_fixtures import EXAMPLE

RULES = "1.2"  # the first version that names onnxruntime (for inference)
FRAMEWORK = "onnxruntime"
TINY = ["fmnist-resnet", "seq-transformer", "ctr-dlrm"]
STANDARD = sorted(t.id for t in load_suite(RULES).tasks.values() if t.size_class == "standard")
SUITE = load_suite(RULES)
SEQ_STEPS, SEQ_BATCH, SEQ_LR = 24, 256, 1e-3


def eval_set(task):
    inputs, n = task_module(task, "inputs"), task.training_settings("smoke")["eval_samples"]
    arrays = load_dataset(task)
    return {k: v[:n] for k, v in inputs.model_inputs(arrays, "eval").items()}, inputs.labels(arrays, "eval")[:n]


def briefly_trained_seq_weights() -> dict[str, np.ndarray]:
    """seq-transformer's seed-0 weights after SEQ_STEPS AdamW steps in JAX (the quickest to train it here,
    ~45 s with its compilation): untrained, no row is sorted right (exact match 0, which no reference value
    can be); after these steps about 2% are."""
    task = SUITE.task("seq-transformer")
    inputs, spec = task_module(task, "inputs"), task_module(task, "model_spec")
    arrays = load_dataset(task)
    impl = load_implementation(task.id, "jax")(Recipe.from_task(task))
    impl.load(spec.init_weights(0))
    impl.set_train_data(inputs.model_inputs(arrays, "train"), inputs.labels(arrays, "train"))
    rows = batch_order(seed=1, epoch=0, num_samples=task.train_samples, batch_size=SEQ_BATCH)[:SEQ_STEPS]
    impl.train_steps(rows, np.full(SEQ_STEPS, SEQ_LR))
    return impl.export()


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """{task: (weights file, PyTorch's response rows and score on those weights)} and a rules copy whose 1.2
    smoke profile takes that score as its inference reference value."""
    root = tmp_path_factory.mktemp("references")
    rules = root / "rules"
    shutil.copytree(REPO / "rules", rules, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    found = {}
    for task_id in TINY:
        task = SUITE.task(task_id)
        spec, metric = task_module(task, "model_spec"), task_module(task, "metric")
        weights = briefly_trained_seq_weights() if task_id == "seq-transformer" else spec.init_weights(0)
        save_weights(root / f"{task_id}.npz", weights)
        inputs, labels = eval_set(task)
        torch_impl = load_implementation(task_id, "pytorch")(Recipe.from_task(task), mode=EAGER)
        torch_impl.load(weights)
        rows = spec.to_response(torch_impl.predict(inputs))
        found[task_id] = root / f"{task_id}.npz", rows, float(metric.score(rows, labels))
        path = rules / RULES / "tasks" / f"{task_id}.yaml"
        data = yaml.safe_load(path.read_text())
        data["profiles"]["smoke"]["inference"] = {"reference_value": found[task_id][2]}
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return rules, found


@pytest.mark.parametrize("task_id", TINY)
def test_every_scenario_valid_and_accuracy_passes(task_id, references, tmp_path):
    rules, found = references
    weights, torch_rows, torch_score = found[task_id]
    assert torch_score > 0
    task = SUITE.task(task_id)
    impl = load_implementation(task_id, FRAMEWORK)(Recipe.from_task(task))  # compiled: ORT_ENABLE_ALL
    conf = tmp_path / "user.yaml"
    conf.write_text(FAST_SERVER_ACCURACY)
    graphs = []
    for scenario in SCENARIOS:
        for mode in ("performance", "accuracy"):
            out = tmp_path / f"{scenario}-{mode}"
            options = InferOptions(
                task_id=task_id,
                framework=FRAMEWORK,
                scenario=scenario,
                mode=mode,
                out=out,
                profile="smoke",
                progress=False,
                rules_version=RULES,
                rules_dir=str(rules),
                weights=weights,
                user_conf=conf if (mode, scenario) == ("accuracy", "server") else None,
            )
            result = infer(options, impl=impl)
            assert json.loads((out / "result.json").read_text()) == json.loads(json.dumps(result))
            assert (result["framework"], result["rules_version"]) == (FRAMEWORK, RULES)
            framework = result["determinism"]["framework"]
            assert framework["execution_provider"] == "CPUExecutionProvider"
            assert framework["graph_optimization_level"] == "ORT_ENABLE_ALL"
            assert result["determinism"]["threads"]["intra_op"] >= 1
            graphs.append(result["served_graph"])
            if mode == "performance":
                check_performance_result(result, scenario)
                continue
            accuracy = json.loads((out / "accuracy.json").read_text())
            n = len(torch_rows)
            rows = read_accuracy_log(out / "mlperf_log_accuracy.json", task_id, n)
            assert_rows_match(task_id, rows, torch_rows)  # ONNX Runtime answers what PyTorch answers
            assert accuracy["reference_value"] == torch_score and accuracy["samples"] == n
            assert accuracy["pass"], accuracy
    # One model file served every run, by its SHA-256; every load after the first found it in the cache.
    assert len({(g["model_sha256"], g["data_sha256"], g["cache_key"]) for g in graphs}) == 1
    assert all(g["from_cache"] for g in graphs[1:])


@pytest.mark.parametrize("task_id", STANDARD)
def test_a_standard_task_s_offline_smoke_run_at_full_size_is_valid(task_id, tmp_path):
    out = tmp_path / "offline"
    result = run_cli(
        *("infer", "--task", task_id, "--rules-version", RULES, "--framework", FRAMEWORK),
        *("--scenario", "offline", "--mode", "performance", "--profile", "smoke", "--quiet", "--out", str(out)),
        timeout_s=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((out / "result.json").read_text())
    assert (record["task"], record["framework"], record["compile_mode"]) == (task_id, FRAMEWORK, "compiled")
    assert [run["result_validity"] for run in record["runs"]] == ["VALID"]
    assert record["served_graph"]["format"] == "onnx" and len(record["served_graph"]["model_sha256"]) == 64


def test_serving_imports_no_other_framework(tmp_path):
    """`python -X importtime` names every module the process imported: no torch, tensorflow, jax or flax."""
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "levelfield", "infer", "--task", "ctr-dlrm"]
        + ["--rules-version", RULES, "--framework", FRAMEWORK, "--scenario", "offline", "--mode", "performance"]
        + ["--profile", "smoke", "--quiet", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in result.stderr.splitlines() if "|" in line}
    assert "onnxruntime" in imported
    assert not imported & {"torch", "tensorflow", "jax", "flax", "keras"}, sorted(imported)


def test_training_in_onnxruntime_is_refused_in_one_line(tmp_path):
    for version in (RULES, "1.1"):
        result = run_cli(
            *("train", "--task", "fmnist-resnet", "--framework", FRAMEWORK, "--rules-version", version),
            *("--profile", "smoke", "--out", str(tmp_path / version)),
        )
        assert_user_error(result, "framework 'onnxruntime' serves inference only; train with one of pytorch")
        assert len([line for line in result.stderr.splitlines() if line.startswith("levelfield: ")]) == 1
        assert not (tmp_path / version).exists()


def test_a_rules_version_that_does_not_name_it_refuses_inference(tmp_path):
    result = run_cli(
        *("infer", "--task", "ctr-dlrm", "--framework", FRAMEWORK, "--rules-version", "1.1"),
        *("--scenario", "offline", "--mode", "performance", "--profile", "smoke", "--out", str(tmp_path / "o")),
    )
    assert_user_error(result, "unknown framework for inference 'onnxruntime' in rules 1.1")


def test_the_rules_name_it_for_inference_only():
    assert SUITE.frameworks == ["pytorch", "tensorflow", "jax"]
    assert SUITE.inference_frameworks == ["pytorch", "tensorflow", "jax", FRAMEWORK]
    assert load_suite("1.1").inference_frameworks == load_suite("1.1").frameworks  # absent: the same
    assert np.all([load_implementation(t, FRAMEWORK).framework == FRAMEWORK for t in SUITE.tasks])


@pytest.fixture(scope="module")
def renamed_tree(tmp_path_factory):
    """A copy of the example tree whose ctr-dlrm PyTorch results sit under onnxruntime/: training and all."""
    root = tmp_path_factory.mktemp("tree") / "example"
    shutil.copytree(EXAMPLE, root)
    (result,) = root.glob("*/*/results/*/ctr-dlrm/pytorch")
    result.rename(result.parent / FRAMEWORK)
    return root


def findings(tree, version: str, code: str) -> list:
    suite = load_suite(version)
    return run_check(code, load_submission(read_tree(tree), suite), Context(suite))


def test_trn032_refuses_a_training_result_in_an_inference_only_framework(renamed_tree):
    (finding,) = findings(renamed_tree, RULES, "TRN032")
    assert finding.path.endswith("/ctr-dlrm/onnxruntime/training") and finding.found == FRAMEWORK
    assert "name for inference only" in finding.message and "pytorch" in finding.expected
    assert not [f for f in findings(renamed_tree, RULES, "STR009") if "onnxruntime" in f.path]  # a known id
    assert findings(EXAMPLE, RULES, "TRN032") == []  # the example trains in the training frameworks


def test_a_version_that_does_not_name_it_reads_its_folder_as_an_unknown_id(renamed_tree):
    unknown = [f for f in findings(renamed_tree, "1.1", "STR009") if "onnxruntime" in f.path]
    assert unknown and "is not a framework of rules 1.1" in unknown[0].message


def test_inference_frameworks_must_keep_every_training_framework(rules_copy):
    suite_file = rules_copy / RULES / "suite.yaml"
    text = suite_file.read_text()
    suite_file.write_text(
        text.replace(
            "inference_frameworks: [pytorch, tensorflow, jax, onnxruntime]", "inference_frameworks: [jax, onnxruntime]"
        )
    )
    with pytest.raises(UserError, match=r"\$\.inference_frameworks: lacks pytorch, tensorflow \(expected every"):
        load_suite(RULES, rules_copy)


def test_list_shows_onnxruntime_for_inference_in_every_task():
    result = run_cli("list", "--rules-version", RULES)
    assert result.returncode == 0, result.stderr
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in result.stdout.splitlines()[2:]]
    served = {row[0]: row[4] for row in rows if len(row) == 5 and row[1] == FRAMEWORK}
    assert served == dict.fromkeys(SUITE.tasks, "inference")
    assert {row[4] for row in rows if len(row) == 5 and row[1] != FRAMEWORK} == {"training + inference"}
