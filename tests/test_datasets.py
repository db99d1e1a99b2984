"""The dataset entry point and `levelfield data verify`, run as a user runs them.

    .venv/bin/python -m pytest tests/test_datasets.py -q

Reader details: tests/test_datasets_idx.py; generators: tests/test_datasets_generated.py.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import assert_user_error, default_rules_version, run_cli
from levelfield.ground.errors import UserError
from levelfield.reference.datasets import arrays_digest, load_dataset, verify_dataset
from levelfield.rules import load_suite
from levelfield.rules.loader import available_versions, rules_root

SUITE = load_suite()
FMNIST = SUITE.task("fmnist-resnet")
FMNIST_DIR = Path(FMNIST.dataset["default_dir"])
NO_ENV = {"LEVELFIELD_DATA_DIR": ""}  # a developer's own setting must not change what the CLI reads


# --- arrays_digest: the documented byte layout -----------------------------------------------------


def test_arrays_digest_hashes_the_documented_byte_layout():
    arrays = {"a": np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32), "b": np.array([7, 8], dtype=np.uint8)}
    expected = hashlib.sha256(
        b"b\n|u1\n2\n" + bytes([7, 8]) + b"a\n<i4\n2,3\n" + b"".join(v.to_bytes(4, "little") for v in range(1, 7))
    ).hexdigest()
    assert arrays_digest(arrays, ["b", "a"]) == expected


def test_arrays_digest_ignores_memory_layout_but_not_meaning():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    digest = arrays_digest({"x": a}, ["x"])
    assert arrays_digest({"x": a.astype(">f4")}, ["x"]) == digest  # big-endian in memory
    assert arrays_digest({"x": np.asfortranarray(a)}, ["x"]) == digest  # column-major in memory
    assert arrays_digest({"x": a.reshape(4, 3)}, ["x"]) != digest  # same bytes, other shape
    assert arrays_digest({"x": a.astype(np.float64)}, ["x"]) != digest  # same values, other dtype
    assert arrays_digest({"y": a}, ["y"]) != digest  # other name
    with pytest.raises(ValueError, match="numeric arrays only"):
        arrays_digest({"s": np.array(["text"])}, ["s"])


def test_arrays_digest_depends_on_order():
    arrays = {"x": np.zeros(2, dtype=np.uint8), "z": np.ones(2, dtype=np.uint8)}
    assert arrays_digest(arrays, ["x", "z"]) != arrays_digest(arrays, ["z", "x"])


# --- dispatch on the rules --------------------------------------------------------------------------


def test_every_task_verifies_against_the_shipped_rules():
    """Every version's tasks; a dataset that several versions pin alike (1.2 pins 1.1's, digest and all) is
    verified once: generating one again would cost seconds and tell nothing new."""
    verified = set()
    for version in available_versions(rules_root()):
        for task in load_suite(version).tasks.values():
            key = json.dumps(task.dataset, sort_keys=True)
            if key in verified:
                continue
            verified.add(key)
            report = verify_dataset(task)
            assert report.ok, (version, report.problems())
            assert report.task_id == task.id and report.dataset == task.dataset["name"]


def test_generated_mismatch_names_the_rules_file(monkeypatch):
    task = SUITE.task("seq-transformer")
    wrong = "0" * 64
    monkeypatch.setitem(task.dataset, "sha256", wrong)
    report = verify_dataset(task)
    assert not report.ok
    [problem] = report.problems()
    assert f"found {report.checks[0].actual}, expected {wrong}" in problem
    with pytest.raises(UserError) as info:
        load_dataset(task)
    assert "seq-transformer.yaml" in info.value.hint


def test_unknown_generator_is_a_user_error(monkeypatch):
    task = SUITE.task("ctr-dlrm")
    monkeypatch.setitem(task.dataset, "generator", "ctr-synthetic-v9")
    with pytest.raises(UserError, match=r"unknown generator 'ctr-synthetic-v9' \(expected one of: .*ctr-synthetic-v1"):
        verify_dataset(task)


# --- the CLI ------------------------------------------------------------------------------------------


def test_cli_verify_all_ok():
    result = run_cli("data", "verify", env=NO_ENV)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for task_id in SUITE.tasks:
        assert any(line.startswith(task_id) for line in lines), result.stdout
    digests = sum(len(task.dataset.get("files", {})) or 1 for task in SUITE.tasks.values())  # a file or an array set
    assert sum(line.rstrip().endswith(" ok") for line in lines) == digests
    assert f"all {digests} digest(s) match rules {SUITE.version}" in result.stdout


def test_cli_verify_one_task():
    result = run_cli("data", "verify", "--task", "seq-transformer", env=NO_ENV)
    assert result.returncode == 0, result.stderr
    assert "seq-transformer" in result.stdout and "fmnist-resnet" not in result.stdout


def test_cli_unknown_task_names_the_value_and_the_allowed_ids():
    result = run_cli("data", "verify", "--task", "mnist", env=NO_ENV)
    assert_user_error(result, "unknown task 'mnist'", "fmnist-resnet, seq-transformer, ctr-dlrm")


def test_cli_missing_data_folder(tmp_path: Path):
    missing = tmp_path / "no-such-folder"
    result = run_cli("data", "verify", "--task", "fmnist-resnet", "--data-dir", str(missing), env=NO_ENV)
    assert_user_error(
        result,
        f"levelfield: error: {missing}: fashion-mnist data folder not found",
        "levelfield: hint: apt-get install -y dataset-fashion-mnist",
    )


def test_cli_missing_folder_still_checks_the_other_tasks(tmp_path: Path):
    result = run_cli("data", "verify", env={"LEVELFIELD_DATA_DIR": str(tmp_path / "gone")})
    assert_user_error(result, "gone: fashion-mnist data folder not found (from $LEVELFIELD_DATA_DIR)")
    generated = [task for task in SUITE.tasks.values() if task.dataset["kind"] == "generated"]
    assert "not checked" in result.stdout and result.stdout.count(" ok\n") == len(generated)


def test_cli_corrupted_byte(tmp_path: Path):
    for entry in FMNIST.dataset["files"].values():
        shutil.copyfile(FMNIST_DIR / entry["file"], tmp_path / entry["file"])
    path = tmp_path / "train-images-idx3-ubyte.gz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit in the middle of the compressed pixels
    path.write_bytes(bytes(data))
    actual = hashlib.sha256(data).hexdigest()
    expected = FMNIST.dataset["files"]["train_images"]["sha256"]
    result = run_cli("data", "verify", "--task", "fmnist-resnet", "--data-dir", str(tmp_path), env=NO_ENV)
    assert_user_error(
        result,
        f"{path}: SHA-256 mismatch (found {actual}, expected {expected})",
        "apt-get install --reinstall dataset-fashion-mnist",
    )
    assert "MISMATCH" in result.stdout and result.stdout.count(" ok\n") == 3


def test_cli_wrong_generated_digest_in_custom_rules(rules_copy: Path):
    path = rules_copy / default_rules_version() / "tasks" / "ctr-dlrm.yaml"
    pinned = SUITE.task("ctr-dlrm").dataset["sha256"]
    wrong = "f" * 64
    path.write_text(path.read_text().replace(pinned, wrong))
    result = run_cli("data", "verify", "--task", "ctr-dlrm", "--rules-dir", str(rules_copy), env=NO_ENV)
    assert_user_error(result, f"SHA-256 mismatch (found {pinned}, expected {wrong})", "ctr-dlrm.yaml")


def test_cli_help_shows_examples():
    result = run_cli("data", "verify", "--help")
    assert result.returncode == 0
    assert "examples:" in result.stdout and "levelfield data verify --task fmnist-resnet" in result.stdout
    assert "--data-dir" in result.stdout and "LEVELFIELD_DATA_DIR" in result.stdout


def test_cli_data_without_subcommand_is_a_usage_error():
    result = run_cli("data")
    assert result.returncode == 2 and "verify" in result.stderr and "Traceback" not in result.stderr
