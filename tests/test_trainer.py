"""`levelfield train`: MLLOG logs with MLPerf's keys in order, seeds, summaries, clean aborts."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from conftest import assert_user_error, default_rules_version, run_cli, start_long_training, train_cli
from levelfield.ground.accelerators import query_nvml
from levelfield.harness.compliance import peer_compliance

TASKS = ["fmnist-resnet", "seq-transformer", "ctr-dlrm"]
FRAMEWORKS = ["pytorch", "tensorflow", "jax"]
REQUIRED_ORDER = [
    "submission_benchmark",
    "cache_clear",
    "init_start",
    "seed",
    "global_batch_size",
    "levelfield_time_to_first_step_s",
    "init_stop",
    "run_start",
    "epoch_start",
    "epoch_stop",
    "eval_start",
    "eval_accuracy",
    "eval_stop",
    "levelfield_peak_rss_mib",
    "run_stop",
]
LEVELFIELD_KEYS = [
    "levelfield_framework",
    "levelfield_framework_version",
    "levelfield_compile_mode",
    "levelfield_determinism",
    "levelfield_device",
    "levelfield_world_size",
    "levelfield_nodes",
    "levelfield_local_batch_size",
    "levelfield_system_fingerprint",
    "levelfield_environment",
    "levelfield_dataset_digest",
    "levelfield_time_to_first_step_s",
    "levelfield_peak_rss_mib",
]
# Logged only where a GPU is measured (NVML, torch.cuda); a CPU-only machine must not make them up.
GPU_KEYS = [
    "levelfield_peak_device_memory_mib",
    "levelfield_device_memory_used_mib",
    "levelfield_peak_device_memory_used_mib",
]
# What every run cost (levelfield/harness/run_meter.py), logged by rank 0 at run_stop; energy "not measured"
# where no meter exists, and a price only with a system description that declares one.
COST_KEYS = [
    "levelfield_sample_interval_ms",
    "levelfield_peak_tree_rss_mib",
    "levelfield_tree_processes",
    "levelfield_process_cpu_s",
    "levelfield_process_cpu_share",
    "levelfield_host_cpu_share",
    "levelfield_others_cpu_share",
    "levelfield_cpu_energy_j",
    "levelfield_energy_j",
]
CPU_ONLY = not query_nvml()["devices"]


def mllog_records(path: Path) -> list[dict]:
    records = []
    for line in path.read_text().splitlines():
        assert line.startswith(":::MLLOG "), line
        records.append(json.loads(line[len(":::MLLOG ") :]))
    return records


def first_index(keys: list[str], key: str) -> int:
    assert key in keys, f"{key} missing from the log"
    return keys.index(key)


# Every task x framework in eager mode, and the compiled mode (the default) on the
# cheapest task per framework: torch.compile of the ResNet alone takes minutes on
# 2 cores, and the equivalence tests already compile every implementation.
SMOKE_CASES = [(task, fw, "eager") for task in TASKS for fw in FRAMEWORKS] + [
    ("ctr-dlrm", fw, "compiled") for fw in FRAMEWORKS
]


def check_smoke_log(out: Path, *, seed: int, framework: str, mode: str, world_size: int = 1) -> list[dict]:
    """What every smoke run's result_0.txt and summary.json must show, for any number of processes."""
    records = mllog_records(out / "result_0.txt")
    keys = [r["key"] for r in records]
    positions = [first_index(keys, k) for k in REQUIRED_ORDER]
    assert positions == sorted(positions), list(zip(REQUIRED_ORDER, positions, strict=True))
    for key in LEVELFIELD_KEYS:
        assert keys.count(key) == 1, key
    by_key = {r["key"]: r for r in records}
    assert by_key["seed"]["value"] == seed
    assert by_key["levelfield_framework"]["value"] == framework
    assert by_key["levelfield_compile_mode"]["value"] == mode
    assert by_key["levelfield_determinism"]["value"]["mode"] == mode  # its switches: tests/test_determinism.py
    assert by_key["eval_accuracy"]["metadata"]["epoch_num"] == 1
    assert by_key["run_stop"]["metadata"]["status"] in ("success", "aborted")
    assert by_key["levelfield_environment"]["value"]["packages"]["numpy"]
    assert not by_key["levelfield_submittable"]["value"]
    assert by_key["levelfield_world_size"]["value"] == world_size
    assert by_key["levelfield_train_samples_per_s"]["value"] > 0 and by_key["levelfield_step_time_ms"]["value"] > 0
    # Each line's metadata names the trainer line that logged it (MLPerf's file/lineno), not the log wrapper.
    assert {r["metadata"]["file"] for r in records} == {"levelfield/harness/trainer.py"}
    if CPU_ONLY:
        assert not set(GPU_KEYS) & set(keys), "GPU figures logged on a machine without a GPU"
        assert by_key["levelfield_energy_j"]["value"] == "not measured"
    for key in COST_KEYS:
        assert keys.count(key) == 1, key
    assert by_key["levelfield_tree_processes"]["value"] >= world_size  # rank 0 walks every rank from the launcher
    # the lines closing the run carry run_stop's time: the time the run is priced by
    assert {r["time_ms"] for r in records if r["key"] in COST_KEYS} == {by_key["run_stop"]["time_ms"]}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"][0]["peer_compliance"] is True
    assert summary["world_size"] == world_size
    assert not list(out.glob("*.inprogress"))
    return records


@pytest.mark.parametrize("task, framework, mode", SMOKE_CASES)
def test_smoke_run_logs_mlperf_keys_in_order(task, framework, mode, tmp_path):
    out = tmp_path / "run"
    result = train_cli(
        out, "--seed", "11", f"--{'compile' if mode == 'compiled' else 'eager'}", task=task, framework=framework
    )
    assert result.returncode == 0, result.stderr[-3000:]
    check_smoke_log(out, seed=11, framework=framework, mode=mode)


def test_runs_get_distinct_seeds_and_a_summary(tmp_path):
    out = tmp_path / "run"
    result = train_cli(out, "--eager", "--runs", "3", "--seed", "40")
    assert result.returncode == 0, result.stderr[-3000:]
    seeds = [next(r["value"] for r in mllog_records(out / f"result_{i}.txt") if r["key"] == "seed") for i in range(3)]
    assert seeds == [40, 41, 42]
    summary = json.loads((out / "summary.json").read_text())
    assert [r["seed"] for r in summary["runs"]] == seeds
    assert summary["mode"] == "eager" and "olympic mean" not in result.stdout  # smoke runs never reach target


def test_existing_results_are_not_overwritten(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "result_0.txt").write_text("precious\n")
    assert_user_error(
        train_cli(out),
        "already holds 1 result file(s)",
    )
    assert (out / "result_0.txt").read_text() == "precious\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--framework", "mxnet"], "unknown framework 'mxnet'"),
        (["--framework", "jax", "--profile", "quick"], "unknown profile 'quick'"),
        (["--framework", "jax", "--set", "momentum=0.5"], "not tunable in ctr-dlrm: momentum"),
        (["--framework", "jax", "--runs", "0"], "--runs: expected a positive number"),
    ],
)
def test_bad_options_are_user_errors(tmp_path, args, message):
    assert_user_error(run_cli("train", "--task", "ctr-dlrm", *args, "--out", str(tmp_path / "o")), message)


def test_sigterm_mid_run_logs_run_stop_aborted(tmp_path):
    out = tmp_path / "run"
    proc = start_long_training(out)  # the submission profile: long enough to be interrupted mid-run
    partial = out / "result_0.txt.inprogress"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (partial.exists() and '"epoch_start"' in partial.read_text()):
        time.sleep(0.2)
    assert partial.exists(), "the run never started"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, stderr[-2000:])
    records = mllog_records(out / "result_0.txt")
    assert records[-1]["key"] == "run_stop" and records[-1]["metadata"]["status"] == "aborted"
    assert records[-1]["metadata"]["reason"] == "interrupted"
    assert not (out / "result_1.txt").exists(), "no run may start after an interrupt"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted_by"] == "SIGTERM"
    # The aborted run counts, with no time: nothing succeeded, so there is no figure to show.
    ttt = summary["time_to_train_s"]
    assert (ttt["n"], ttt["olympic_mean"], ttt["single_run_s"], ttt["mean"]) == (0, None, None, None)


def test_peer_engine_rejects_a_broken_log(tmp_path):
    out = tmp_path / "run"
    assert train_cli(out, "--eager", "--seed", "2").returncode == 0
    good = (out / "result_0.txt").read_text()
    assert peer_compliance(out / "result_0.txt")[0]
    claimed = tmp_path / "claimed_success.txt"  # success without reaching the target
    claimed.write_text(good.replace('"status": "aborted"', '"status": "success"'))
    assert not peer_compliance(claimed)[0]
    no_stop = tmp_path / "no_run_stop.txt"
    no_stop.write_text("".join(line + "\n" for line in good.splitlines() if '"run_stop"' not in line))
    assert not peer_compliance(no_stop)[0]


def test_the_peer_check_uses_the_rules_the_run_used(rules_copy, tmp_path):
    """--rules-dir reaches the peer engine: a ruleset there that no log can pass marks the run non-compliant."""
    ruleset = rules_copy / default_rules_version() / "mllog" / "training.yaml"
    ruleset.write_text(
        ruleset.read_text().replace(
            "NAME:  submission_org\n    REQ:   EXACTLY_ONE\n    CHECK: \" v['value'] != '' \"",
            "NAME:  submission_org\n    REQ:   EXACTLY_ONE\n    CHECK: \" v['value'] == 'nobody' \"",
        )
    )
    out = tmp_path / "run"
    result = train_cli(out, "--eager", "--seed", "2", "--rules-dir", str(rules_copy))
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "summary.json").read_text())["runs"][0]["peer_compliance"] is False
    assert peer_compliance(out / "result_0.txt")[0]  # the shipped ruleset passes the same log


def test_a_run_that_fails_leaves_no_result_file(rules_copy, tmp_path):
    """A run that stops on an error ends its log with run_stop aborted/error and keeps the .inprogress name."""
    from levelfield.rules import load_suite

    path = rules_copy / default_rules_version() / "tasks" / "ctr-dlrm.yaml"
    pinned = load_suite().task("ctr-dlrm").dataset["sha256"]
    path.write_text(path.read_text().replace(pinned, "f" * 64))
    out = tmp_path / "run"
    result = train_cli(out, "--eager", "--rules-dir", str(rules_copy))
    assert_user_error(result, f"SHA-256 mismatch (found {pinned}, expected {'f' * 64})")
    assert not (out / "result_0.txt").exists()
    records = mllog_records(out / "result_0.txt.inprogress")
    assert records[-1]["key"] == "run_stop"
    assert {"status": "aborted", "reason": "error"}.items() <= records[-1]["metadata"].items()
