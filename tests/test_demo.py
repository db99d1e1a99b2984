"""The demo (README command 1) runs end to end and never writes into a folder it did not make."""

from __future__ import annotations

import json

from conftest import assert_user_error, run_cli


def test_demo_verifies_data_writes_system_and_prints_tasks(tmp_path):
    out = tmp_path / "demo"
    result = run_cli("demo", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "[1/3] datasets" in result.stdout and "MISMATCH" not in result.stdout
    (system_file,) = (out / "systems").glob("*.json")
    desc = json.loads(system_file.read_text())
    assert desc["fingerprint"]["digest"] in result.stdout
    for task_id in ("fmnist-resnet", "seq-transformer", "ctr-dlrm"):
        assert f"| {task_id} " in result.stdout
    # A second run replaces its own output.
    assert run_cli("demo", "--out", str(out)).returncode == 0


def test_demo_refuses_a_folder_it_did_not_make(tmp_path):
    precious = tmp_path / "my-submission"
    precious.mkdir()
    (precious / "notes.txt").write_text("mine")
    assert_user_error(run_cli("demo", "--out", str(precious)), "was not made by `levelfield demo`")
    assert [p.name for p in precious.iterdir()] == ["notes.txt"]


def test_demo_reports_missing_data(tmp_path):
    result = run_cli("demo", "--out", str(tmp_path / "d"), "--data-dir", str(tmp_path / "no-data"))
    assert_user_error(result, "no-data", "dataset-fashion-mnist")
