"""`levelfield device-check` at CPU scale, as CI runs it; its plan at GPU size; its processes' edge cases.

    .venv/bin/python -m pytest tests/test_device_check.py -q

Issue 36: the check that proves the GPU paths on a lent GPU machine runs here at smoke size, so it cannot
rot between GPU runs. One full smoke check (every kind of step in every framework installed here: one
process per framework, one pytest process for the equivalence tests) is shared by this module's tests;
the GPU-size plan is checked from the rules without running it; a child that overruns its share, dies
mid-step, or runs past its deadline inside pytest is played by small real child processes.

Cost on this project's 2-core CPU beside other work (load 15-21, 2026-11-28), this module against the first
design's (a process per step; 137 s on an idle machine): started side by side, 514 s wall and 133 s of CPU
against 702 s and 199 s; one after the other, 390 s (124 s CPU) against 567 s (200 s), then 847 s (198 s,
TensorFlow's threads spinning on a starved host) against 716 s (195 s). The smoke check is most of it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from levelfield.cli.device_check import plan as P
from levelfield.cli.device_check.budget import MIN_STEP_S, PLENTY, expected, share_of
from levelfield.cli.device_check.events import EVENTS_FD_ENV, SPEC_ENV, EventReader, finished
from levelfield.cli.device_check.execute import PYTEST_PLUGIN, Check, command, run_process
from levelfield.cli.device_check.report import JSON_NAME, MARKDOWN_NAME, markdown
from levelfield.rules import load_suite

FRAMEWORKS = ["pytorch", "tensorflow", "jax"]
TIMEOUT_S = 900  # the smoke check ends in minutes; a hang fails the test, not the CI job


def device_check(*args: str) -> subprocess.CompletedProcess:
    return run_cli("device-check", *args, cwd=REPO, timeout_s=TIMEOUT_S)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("device-check")
    result = device_check("--out", str(out), "--size", "smoke", "--time-limit-s", str(TIMEOUT_S - 60))
    return out, result, json.loads((out / JSON_NAME).read_text())


def test_the_smoke_check_passes_every_kind_of_step_in_every_framework(smoke):
    out, result, doc = smoke
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    assert doc["passed"] and doc["size"] == "smoke" and doc["frameworks"] == FRAMEWORKS
    assert {step["kind"] for step in doc["steps"]} == set(P.KINDS)
    assert [s["id"] for s in doc["steps"] if s["status"] != "passed"] == []
    for kind in ("time_to_accuracy", "throughput", "inference"):
        assert {s["framework"] for s in doc["steps"] if s["kind"] == kind} == set(FRAMEWORKS), kind
    scenarios = {s["scenario"] for s in doc["steps"] if s["kind"] == "inference"}
    assert scenarios == set(P.SCENARIOS)
    (equivalence,) = [s for s in doc["steps"] if s["kind"] == "equivalence"]
    figures = equivalence["figures"]
    assert figures["tests"] == figures["passed"] > 0 and figures["failed"] == 0 and figures["failed_tests"] == []
    assert figures["frameworks"] == ",".join(FRAMEWORKS)
    assert (out / MARKDOWN_NAME).read_text().startswith("# levelfield device check: PASSED")


def test_each_framework_runs_all_its_steps_in_one_process(smoke):
    _, _, doc = smoke
    assert [p["process"] for p in doc["processes"]] == [*FRAMEWORKS, P.EQUIVALENCE_PROCESS]
    assert all(p["exit"] == 0 and p["startup_s"] is not None for p in doc["processes"]), doc["processes"]
    pids = {}
    for step in doc["steps"]:
        pids.setdefault(step["process"], set()).add(step["pid"])
    assert all(len(ids) == 1 for ids in pids.values()), pids  # every step of a process ran in that one process
    assert len(set.union(*pids.values())) == len(pids) == len(FRAMEWORKS) + 2  # the check's, and pytest's
    # A task's Offline and SingleStream runs share one implementation (and its compiled predict).
    for step in doc["steps"]:
        if step["kind"] == "inference":
            assert step["reused_implementation"] is (step["scenario"] == "singlestream"), step["id"]


def test_each_run_reports_its_device_and_each_training_run_its_fp32_switches(smoke):
    _, _, doc = smoke
    training = [s for s in doc["steps"] if s["kind"] in ("time_to_accuracy", "throughput")]
    for step in training + [s for s in doc["steps"] if s["kind"] == "inference"]:  # result.json's too
        device = step["figures"]["device"]
        assert device["kind"] == "cpu" and device["count"] == 1 and device["name"], step["id"]
        assert device["driver"] is device["cuda_runtime"] is device["cudnn"] is device["nccl"] is None
    switches = {s["framework"]: s["figures"]["precision_switches"] for s in training}
    assert switches["pytorch"]["cudnn_allow_tf32"] is False and switches["pytorch"]["matmul_allow_tf32"] is False
    assert switches["pytorch"]["float32_matmul_precision"] == "highest"
    assert switches["jax"]["jax_default_matmul_precision"] == "highest"
    assert switches["tensorflow"]["tensor_float_32_execution"] is False
    tta = [s for s in doc["steps"] if s["kind"] == "time_to_accuracy"]
    assert all(s["figures"]["status"] == "success" and s["figures"]["time_to_train_s"] > 0 for s in tta)


def test_a_check_stopped_by_its_time_limit_reports_what_it_finished(tmp_path):
    # Under MIN_STEP_S: the system description is taken all the same (the check's own, untimed first step),
    # and the one framework's process, whose share cannot reach MIN_STEP_S, is never started, however fast
    # this machine is.
    result = device_check(
        *("--out", str(tmp_path), "--size", "smoke", "--time-limit-s", str(MIN_STEP_S / 2)),
        *("--frameworks", "jax", "--kinds", "sysinfo", "time_to_accuracy", "throughput"),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    doc = json.loads((tmp_path / JSON_NAME).read_text())
    statuses = {s["id"]: s["status"] for s in doc["steps"]}
    assert statuses["sysinfo"] == "passed" and not doc["passed"]
    unfinished = [s for s in doc["steps"] if s["id"] != "sysinfo"]
    assert unfinished and all(s["status"] == "not_run" for s in unfinished)
    assert all("time limit" in s["reason"] for s in unfinished)
    assert doc["processes"] == [{"process": "jax", "share_s": doc["processes"][0]["share_s"], "exit": "not started"}]
    assert "NOT PASSED" in (tmp_path / MARKDOWN_NAME).read_text()


# -- the check's side of a child process, played by small real children ---------------------------------
FAKE_CHILD = """
import json, os, sys, time
fd, first, then = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def send(event):
    os.write(fd, (json.dumps(event) + "\\n").encode())
send({"event": "ready"})
send({"event": "result", "result": json.loads(first)})
send({"event": "start", "id": "b"})
print("step b's last words", flush=True)
if then == "hang":
    time.sleep(600)
os._exit(3)
"""
SHARE_S = 8.0  # the fake child's share: it sends its three events within it even on a loaded 2-core CPU


def _fake_check(tmp_path: Path, then: str) -> Check:
    steps = tuple(P.Step(name, "throughput", "fake", framework="jax", estimate_s=1) for name in "abc")
    plan = P.Plan(size="smoke", rules_version="1.1", frameworks=("jax",), steps=steps)
    check = Check(plan, tmp_path, on_change=lambda results, processes: None)
    first = json.dumps(finished(steps[0], "passed", 0.5, figures={"fake": True}))
    spec = {"deadline": time.monotonic() + SHARE_S, "log": "logs/fake.log", "steps": [asdict(s) for s in steps]}
    (tmp_path / "logs").mkdir()

    def launcher(plan, process, spec_path, events_fd):
        return [sys.executable, "-c", FAKE_CHILD, str(events_fd), first, then], {}

    run_process(check, "fake", spec, tmp_path, launcher)
    return check


def test_a_child_that_overruns_its_share_is_killed_and_its_step_timed_out(tmp_path):
    check = _fake_check(tmp_path, then="hang")
    statuses = {id: (r["status"], r["reason"]) for id, r in check.results.items()}
    assert statuses["a"] == ("passed", None)  # what it reported before it was killed stays
    assert statuses["b"][0] == "timed_out" and "at the end of its process's share" in statuses["b"][1]
    assert statuses["c"] == ("not_run", f"time limit: its process's share ({SHARE_S:.0f} s) ran out")
    (process,) = check.processes
    assert process["exit"] == "killed at the end of its share" and process["startup_s"] is not None
    assert "step b's last words" in (tmp_path / "logs" / "fake.log").read_text()


def test_a_child_that_dies_fails_the_step_it_was_in_and_leaves_the_rest_not_run(tmp_path):
    check = _fake_check(tmp_path, then="die")
    statuses = {id: (r["status"], r["reason"]) for id, r in check.results.items()}
    assert statuses["a"] == ("passed", None)
    assert statuses["b"] == ("failed", "its process ended (exit status 3) during this step")
    assert statuses["c"] == ("not_run", "no result: its process ended (exit status 3) without running it")
    assert check.processes[0]["exit"] == 3


def test_a_worker_passes_over_steps_its_share_cannot_hold(tmp_path):
    """The real worker: each step estimated past the share is not started, with the reason; nothing else ran."""
    plan = P.build_plan("smoke", ["jax"], kinds=("time_to_accuracy", "inference"))
    steps = tuple(P.Step(**{**asdict(s), "estimate_s": 10_000}) for s in plan.steps)
    plan = P.Plan(size="smoke", rules_version=plan.rules_version, frameworks=("jax",), steps=steps)
    check = Check(plan, tmp_path, on_change=lambda results, processes: None)
    spec = {"out": str(tmp_path), "force": False, "rules_dir": None, "rules_version": plan.rules_version}
    spec.update(deadline=time.monotonic() + 600, log="logs/jax.log", steps=[asdict(s) for s in steps])
    run_process(check, "jax", spec, REPO, command)
    assert [r["status"] for r in check.results.values()] == ["not_run"] * len(steps)
    assert all("the step is estimated at 10000 s" in r["reason"] for r in check.results.values())
    assert check.processes[0]["exit"] == 0 and check.processes[0]["startup_s"] is not None
    assert not (tmp_path / "runs").exists()


# -- the equivalence process's plugin, on small test modules ---------------------------------------------
MODULES = {
    "test_fine.py": "def test_one():\n    pass\n\ndef test_two():\n    pass\n",
    "test_wrong.py": "def test_right():\n    pass\n\ndef test_wrong():\n    assert 1 == 2, 'planted'\n",
    "test_broken.py": "import a_module_that_does_not_exist  # noqa\n",
}


def _plugin_run(tmp_path: Path, deadline: float) -> dict[str, dict]:
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    steps = [P.Step(f"equivalence-{name[5:-3]}", "equivalence", "equivalence", module=name) for name in MODULES]
    spec = {"deadline": deadline, "log": "logs/equivalence.log", "steps": [asdict(s) for s in steps]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    read_fd, write_fd = os.pipe()
    env = {**os.environ, SPEC_ENV: str(tmp_path / "spec.json"), EVENTS_FD_ENV: str(write_fd)}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", PYTEST_PLUGIN]
    args += ["--continue-on-collection-errors", *MODULES]
    done = subprocess.run(args, cwd=tmp_path, env=env, pass_fds=(write_fd,), capture_output=True, timeout=300)
    os.close(write_fd)
    reader, events = EventReader(read_fd), []
    while not reader.closed:
        events += reader.events(5)
    reader.close()
    assert events[0] == {"event": "ready"}, (events, done.stdout[-2000:])
    return {e["result"]["id"]: e["result"] for e in events if e["event"] == "result"}


def test_the_pytest_plugin_reports_one_step_per_module(tmp_path):
    results = _plugin_run(tmp_path, deadline=time.monotonic() + 600)
    fine, wrong, broken = (results[f"equivalence-{n}"] for n in ("fine", "wrong", "broken"))
    assert fine["status"] == "passed" and fine["figures"]["tests"] == fine["figures"]["passed"] == 2
    assert wrong["status"] == "failed" and wrong["reason"] == "1 of 2 tests failed"
    assert wrong["figures"]["failed_tests"] == ["test_wrong.py::test_wrong"] and "planted" in wrong["output_tail"]
    assert broken["status"] == "failed" and broken["reason"] == "the module could not be collected"
    assert "a_module_that_does_not_exist" in broken["output_tail"]


def test_the_pytest_plugin_starts_no_test_past_its_deadline(tmp_path):
    results = _plugin_run(tmp_path, deadline=time.monotonic() - 1)
    fine = results["equivalence-fine"]
    assert fine["status"] == "timed_out" and fine["reason"] == "time limit: 2 of 2 tests not started"
    assert fine["figures"]["skipped"] == 2 and fine["figures"]["passed"] == 0


# -- the budget ------------------------------------------------------------------------------------------
def test_the_time_left_is_shared_by_estimate_unless_it_is_plentiful():
    assert share_of(300, [100, 200]) == 100  # tight: in proportion to the estimates
    assert share_of(3000, [100, 200]) == 3000 - PLENTY * 200  # plentiful: all but PLENTY x the later ones'
    assert share_of(10, [0, 0]) == 5


def test_the_dry_run_passes_over_what_does_not_fit_and_keeps_the_cheaper_steps_after_it(monkeypatch):
    monkeypatch.setitem(P.START_S, "smoke", {"jax": 4, P.EQUIVALENCE_PROCESS: 14})
    steps = [P.Step(f"s{i}", "throughput", "jax", estimate_s=e) for i, e in enumerate((10, 50, 5))]
    steps += [P.Step(f"e{i}", "equivalence", P.EQUIVALENCE_PROCESS, estimate_s=e) for i, e in enumerate((30, 30))]
    plan = P.Plan(size="smoke", rules_version="1.1", frameworks=("jax",), steps=tuple(steps))
    # jax: 69 s estimated, equivalence 74: jax's share of 80 s is 80 x 69 / 143 = 38.6 s; after its start
    # (4 s) and s0 (10 s), 24.6 s are left: not s1's 50, but s2's 5; equivalence then has 80 - 19 = 61 s.
    rows = {r["id"]: (r["status"], r["start_s"]) for r in expected(plan, 80)}
    assert rows["s0"] == ("runs", 4) and rows["s1"] == ("cut", None) and rows["s2"] == ("runs", 14)
    assert rows["e0"] == ("runs", 33) and rows["e1"] == ("partly", 63)  # pytest starts tests until its deadline


def test_the_dry_run_prints_the_plan_and_runs_nothing(tmp_path):
    result = device_check("--out", str(tmp_path / "x"), "--size", "gpu", "--frameworks", "pytorch", "jax", "--dry-run")
    assert result.returncode == 0, result.stderr[-2000:]
    assert (
        "| throughput-seq-transformer-standard-jax-fp32 " in result.stdout and "within 360 s (dry run)" in result.stdout
    )
    assert not (tmp_path / "x").exists()


# -- the command's refusals --------------------------------------------------------------------------------
def test_an_earlier_report_is_kept_unless_forced(tmp_path):
    (tmp_path / JSON_NAME).write_text("{}")
    result = device_check("--out", str(tmp_path), "--size", "smoke", "--kinds", "sysinfo")
    assert result.returncode == 2 and "--force" in result.stderr and JSON_NAME in result.stderr
    assert "Traceback" not in result.stderr and (tmp_path / JSON_NAME).read_text() == "{}"


def test_a_bad_time_limit_is_one_line(tmp_path):
    result = device_check("--out", str(tmp_path), "--time-limit-s", "0")
    assert result.returncode == 2 and "--time-limit-s 0.0: expected a positive number" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / JSON_NAME).exists()


# -- the plan ---------------------------------------------------------------------------------------------
def test_the_gpu_plan_covers_every_standard_task_in_every_framework():
    plan = P.build_plan("gpu", ["jax", "pytorch"])
    steps = plan.steps
    standard = {t.id for t in load_suite().tasks.values() if t.size_class == "standard"}
    assert len(standard) == 3 and plan.frameworks == ("pytorch", "jax")
    assert plan.processes() == ["pytorch", "jax", P.EQUIVALENCE_PROCESS]
    for kind, per_task in (("throughput", 1), ("inference", len(P.SCENARIOS))):
        cases = [(s.task, s.framework) for s in steps if s.kind == kind]
        assert sorted(set(cases)) == sorted((t, fw) for t in standard for fw in ("pytorch", "jax")), kind
        assert len(cases) == len(standard) * 2 * per_task, kind
    for step in steps:
        assert step.estimate_s or step.kind == "sysinfo", step.id  # the time limit is shared out by estimates
        if step.kind == "throughput":
            assert step.timed_steps == P.THROUGHPUT_STEPS_BY_SIZE["gpu"] and step.profile == "submission"
        if step.mode == "eager":
            assert step.mode_reason and (step.task, step.framework) in P.EAGER
    for framework in ("pytorch", "jax"):  # each process's order: time to accuracy, serving, then training
        kinds = [s.kind for s in plan.process_steps(framework)]
        assert kinds == ["time_to_accuracy"] + ["inference"] * 6 + ["throughput"] * 3
    assert [s.module for s in plan.process_steps(P.EQUIVALENCE_PROCESS)] == list(P.EQUIVALENCE_MODULES["gpu"])
    assert plan.equivalence_frameworks == "pytorch,jax" and steps[0].id == "sysinfo"


def test_the_plan_times_each_precision_its_rules_allow(tmp_path):
    suite = load_suite()
    assert P.allowed_precisions(suite.task("fmnist-resnet")) == ["fp32", "bf16"]  # a tunable choice
    assert P.allowed_precisions(suite.task("ctr-dlrm-standard")) == ["fp32"]  # fixed in rules 1.1
    rules = tmp_path / "rules"
    shutil.copytree(REPO / "rules", rules, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    task_file = rules / suite.version / "tasks" / "ctr-dlrm-standard.yaml"
    text = task_file.read_text().replace("    precision: fp32\n  tunable:\n", "  tunable:\n")
    task_file.write_text(
        text.replace("  tunable:\n", "  tunable:\n    precision: {default: fp32, choices: [fp32, bf16]}\n")
    )
    plan = P.build_plan("gpu", ["jax"], rules_dir=str(rules), kinds=("throughput",))
    assert [(s.task, s.precision) for s in plan.steps] == [
        ("ctr-dlrm-standard", "fp32"),
        ("ctr-dlrm-standard", "bf16"),  # the cheapest task's both precisions before the next task
        ("image-resnet50-standard", "fp32"),
        ("seq-transformer-standard", "fp32"),
    ]


def test_one_framework_runs_no_equivalence_and_kinds_select_steps():
    assert "equivalence" not in {s.kind for s in P.build_plan("gpu", ["jax"]).steps}
    kinds = {s.kind for s in P.build_plan("smoke", FRAMEWORKS, kinds=("throughput", "equivalence")).steps}
    assert kinds == {"throughput", "equivalence"}


def test_the_report_keeps_versions_as_text():
    device = {"kind": "cuda", "name": "NVIDIA H200", "count": 1, "driver": "580.159.04"}
    device.update(cuda_runtime="13.0", cudnn="91900", nccl="2.28.9")
    step = {"id": "tta", "kind": "time_to_accuracy", "process": "pytorch", "status": "passed", "seconds": 1.0}
    step.update(mode="compiled", estimate_s=22, figures={"device": device, "time_to_train_s": 0.78, "epochs": 1})
    doc = {"size": "gpu", "time_limit_s": 360.0, "elapsed_s": 20.0, "started_utc": "2026-11-27T22:31:00Z"}
    doc.update(rules_version="1.1", frameworks=["pytorch"], absent=["tensorflow", "jax"], versions={"torch": "2.11.0"})
    doc.update(passed=True, counts={"passed": 1, "failed": 0, "timed_out": 0, "not_run": 0}, steps=[step])
    doc["processes"] = [{"process": "pytorch", "share_s": 99.0, "startup_s": 5.1, "seconds": 30.2, "exit": 0}]
    text = markdown(doc)
    assert "| 13.0 " in text and "| 2.28.9 " in text and "0.78 s to target (1 epochs)" in text
    (row,) = [line for line in text.splitlines() if line.startswith("| pytorch ")]  # the processes table
    assert [cell.strip() for cell in row.split("|")[1:-1]] == ["pytorch", "99", "5.1", "30.2", "0"]
