"""The host's load over a whole run (issue 37 items 2 and 5): recorded per run, marked in the leaderboard,
and, in a non-submittable profile, a run the load broke sized again and re-run.

A real `levelfield infer` (framework none: the harness with a model of a fixed cost) runs while the test
starts two real busy loops halfway through its timed window; the run records them as other processes'
load, above rules 1.2's threshold, and the leaderboard marks its row `loaded`.

The re-run needs a load that *rises* after sizing. This machine is shared (other sessions load it as they
please), so its real /proc/stat cannot promise a rise; that test alone reads a fake /proc/stat whose
other-process load the test switches on when the first timed run starts (host_load.PROC_STAT, the seam
tests/test_host_load.py uses), while the run itself is made really INVALID: the model's cost rises tenfold
at the same moment, so the Server run sized for the old cost misses its latency bound in LoadGen.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from test_leaderboard import write_tree

from levelfield.checker.engine import Report
from levelfield.ground import host_load
from levelfield.ground.process_tree import TICKS_PER_S
from levelfield.harness import sizing
from levelfield.reference.null_model import CostModel
from levelfield.rules import load_suite
from levelfield.tools.leaderboard.collect import collect
from levelfield.tools.leaderboard.document import build_document
from levelfield.tools.leaderboard.render_md import render_markdown

pytestmark = pytest.mark.serial  # a clean run must record no other load: nothing may run beside it

BUSY = [sys.executable, "-c", "while True: pass"]
RULES = "1.2"  # the version with checks.host_load_max_others_share
HOURLY_USD = 2.5


def wait_for(path: Path, process: subprocess.Popen | None = None, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert process is None or process.poll() is None, "the run ended before its timed window started"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


@pytest.fixture(scope="module")
def loaded_run(tmp_path_factory) -> tuple[dict, float, float]:
    """(result.json, the busy loops' CPU seconds, the run process's own CPU seconds) over the timed window of
    an Offline run of about 4 s with one busy loop per core started halfway through it."""
    tmp = tmp_path_factory.mktemp("loaded")
    conf = tmp / "user.yaml"
    conf.write_text("version: 1\noffline: {min_duration_ms: 4000}\n")
    system = tmp / "system.json"
    system.write_text(json.dumps({"hourly_price_usd": HOURLY_USD}))
    out = tmp / "run"
    args = ["infer", "--task", "ctr-dlrm", "--framework", "none", "--cost-per-call-us", "1000"]
    args += ["--scenario", "offline", "--mode", "performance", "--profile", "smoke", "--user-conf", str(conf)]
    args += ["--system", str(system), "--rules-version", RULES, "--quiet", "--out", str(out)]
    run = subprocess.Popen([sys.executable, "-m", "levelfield", *args], stderr=subprocess.PIPE, text=True)
    loops: list[subprocess.Popen] = []
    try:
        wait_for(out / "run_1", run)  # the folder of the timed run: LoadGen starts now
        own_s = -cpu_s(run.pid)
        time.sleep(2.0)  # halfway
        loops = [subprocess.Popen(BUSY) for _ in range(os.cpu_count() or 2)]
        detail = out / "run_1" / "mlperf_log_detail.txt"  # LoadGen opens it as it starts, fills it in as it ends
        while "result_validity" not in detail.read_text(errors="replace"):
            assert run.poll() is None, "the run ended unseen"
            time.sleep(0.01)
        busy_s, own_s = sum(cpu_s(p.pid) for p in loops), own_s + cpu_s(run.pid)
        for loop in loops:
            loop.kill()
        _, stderr = run.communicate(timeout=600)
    finally:
        for process in (run, *loops):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
    assert run.returncode == 0, stderr
    return json.loads((out / "result.json").read_text()), busy_s, own_s


def test_a_busy_loop_started_halfway_is_recorded_as_other_processes_load(loaded_run):
    result, busy_s, own_s = loaded_run
    cost = result["runs"][0]["resources"]
    threshold = load_suite(RULES).checks["host_load_max_others_share"]
    assert cost["others_cpu_share"] > threshold, cost  # loaded
    # the loops are other processes' work, not the run's: the run's CPU time is its own process's
    assert busy_s > 0.2, "the busy loops got no CPU time"
    assert cost["process_cpu_s"] <= own_s + 0.2 and cost["process_cpu_s"] < own_s + 0.5 * busy_s
    others_s = cost["others_cpu_share"] * cost["window_s"] * (os.cpu_count() or 1)
    assert others_s >= 0.8 * busy_s
    assert cost["price_usd_per_million_samples"] == pytest.approx(
        HOURLY_USD * cost["window_s"] / 3600 / cost["samples"] * 1e6
    )


def checked_under_1_2(path, **_options) -> Report:
    """The checker's verdict for a synthetic tree: clean (the leaderboard ranks clean trees only; SYS009 is a
    warning), read under rules 1.2, whose threshold the leaderboard marks by."""
    from levelfield.ground.submission.loader import load_submission
    from levelfield.ground.submission.tree import read_tree

    suite = load_suite(RULES)
    return Report(str(path), RULES, [], submission=load_submission(read_tree(Path(path)), suite), suite=suite)


def test_the_loaded_run_is_marked_in_the_leaderboard(loaded_run, tmp_path):
    result, _, _ = loaded_run
    tree = write_tree(
        tmp_path / "acme", training={}, inference={"pytorch": {"offline": [5000.0]}, "jax": {"offline": [6000.0]}}
    )
    performance = next(tree.rglob("pytorch/offline/performance/result.json"))
    performance.write_text(json.dumps({**json.loads(performance.read_text()), "runs": result["runs"]}))
    doc = build_document(collect([tree], check=checked_under_1_2))
    pytorch = next(r for r in doc["inference"] if r["framework"] == "pytorch")
    jax = next(r for r in doc["inference"] if r["framework"] == "jax")
    assert pytorch["host_loaded"] is True and pytorch["scenarios"]["offline"]["host_loaded"] is True
    assert jax["host_loaded"] is None  # recorded no load: not judged
    text = render_markdown(doc)
    share = pytorch["others_cpu_share_max"]
    assert f"{share:.0%} loaded" in next(line for line in text.splitlines() if line.startswith(f"| {pytorch['id']}"))
    assert "loaded: during at least one timed run" in text and pytorch["id"] in text.split("loaded: during")[1]


# -- a run the host's load broke, in a non-submittable profile ------------------------------------------
class FakeProcStat:
    """/proc/stat's first line, advancing with the clock: `others` of the host's CPU time busy."""

    def __init__(self, path: Path):
        self.path, self.others, self.busy, self.idle = path, 0.0, 0.0, 0.0
        self._stop = threading.Event()
        self._write()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _write(self) -> None:
        part = self.path.with_suffix(".part")
        part.write_text(f"cpu  {int(self.busy)} 0 0 {int(self.idle)} 0 0 0 0\n")
        part.replace(self.path)

    def _run(self) -> None:
        last = time.perf_counter()
        while not self._stop.wait(0.01):
            now = time.perf_counter()
            ticks = (now - last) * (os.cpu_count() or 1) * TICKS_PER_S
            self.busy += ticks * self.others
            self.idle += ticks * (1 - self.others)
            last = now
            self._write()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def test_an_invalid_run_while_the_load_rose_is_sized_again_and_rerun(tmp_path, monkeypatch, capsys):
    from levelfield.harness.options import InferOptions
    from levelfield.harness.runner import build_implementation, cached_suite, infer

    stat = FakeProcStat(tmp_path / "stat")
    monkeypatch.setattr(host_load, "PROC_STAT", stat.path)
    cost = CostModel(per_call_us=1000, per_sample_us=2)
    options = InferOptions(
        task_id="ctr-dlrm",
        framework="none",
        scenario="server",
        mode="performance",
        out=tmp_path / "run",
        profile="smoke",
        null_cost=cost,
        progress=False,
    )
    impl = build_implementation(options, cached_suite(None, None).task("ctr-dlrm").for_profile("smoke"))
    outcome: dict = {}
    worker = threading.Thread(target=lambda: outcome.update(result=infer(options, impl=impl)), daemon=True)
    worker.start()
    try:
        wait_for(options.out / "run_1")  # the first timed run starts: the host gets busy, the model slow
        stat.others = 0.9
        impl.cost = CostModel(per_call_us=10 * cost.per_call_us, per_sample_us=10 * cost.per_sample_us)
        settings = options.out / "settings.json"
        deadline = time.monotonic() + 300
        while "host_load_reruns" not in settings.read_text() and worker.is_alive():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        stat.others = 0.0  # the other job ended
        worker.join(timeout=600)
    finally:
        stat.close()
    result = outcome["result"]
    reruns = result["sizing"]["host_load_reruns"]
    assert [(r["run"], r["result_validity"]) for r in reruns] == [(1, "INVALID")]
    assert reruns[0]["run_others_cpu_share"] - reruns[0]["sizing_others_cpu_share"] >= sizing.HOST_LOAD_RISE
    assert "sizing again from a fresh probe and running the repeats again (1 of at most 2" in capsys.readouterr().err
    assert json.loads((options.out / "settings.json").read_text())["sizing"]["host_load_reruns"] == reruns
    # the fresh probe measured the slower model: a lower Server target than the first sizing chose
    assert result["sizing"]["chosen"]["target_qps"] < reruns[0]["chosen"]["target_qps"]


@pytest.mark.parametrize(
    "submittable, validity, shares, done, rerun",
    [
        (False, "INVALID", (0.05, 0.4), 0, True),
        (True, "INVALID", (0.05, 0.4), 0, False),  # a submission run is never re-run for its host
        (False, "VALID", (0.05, 0.4), 0, False),
        (False, "INVALID", (0.30, 0.35), 0, False),  # loaded all along: the load did not rise
        (False, "INVALID", (None, 0.9), 0, False),  # not measured: no claim
        (False, "INVALID", (0.05, 0.4), sizing.MAX_HOST_LOAD_RERUNS, False),
    ],
)
def test_when_a_run_is_rerun_for_the_hosts_load(submittable, validity, shares, done, rerun):
    eff = {"scenario": "server", "submittable": submittable, "max_batch_size": 64, "target_qps": 900.0}
    found = sizing.host_load_rerun(eff, {"result_validity": validity}, *shares, [{}] * done)
    assert (found is not None) == rerun
    if rerun:
        assert found["chosen"] == {"max_batch_size": 64, "target_qps": 900.0}


def test_training_rows_are_marked_by_their_busiest_run(tmp_path):
    tree = write_tree(tmp_path / "acme", inference={})
    shares = {"pytorch": [0.02, 0.4, 0.03, 0.02, 0.01], "jax": [0.02] * 5}  # tensorflow: logs before metering
    for framework, values in shares.items():
        for i, share in enumerate(values):
            log = next(tree.rglob(f"{framework}/training/result_{i}.txt"))
            lines = log.read_text().splitlines(keepends=True)
            stop = lines.pop()  # run_stop, last
            entry = json.loads(stop[len(":::MLLOG ") :])
            added = {**entry, "key": "levelfield_others_cpu_share", "value": share, "metadata": {"file": "x"}}
            log.write_text("".join(lines) + ":::MLLOG " + json.dumps(added) + "\n" + stop)
    doc = build_document(collect([tree], check=checked_under_1_2))
    marks = {r["framework"]: (r["host_loaded"], r["others_cpu_share_max"]) for r in doc["training"]}
    assert marks == {"pytorch": (True, 0.4), "jax": (False, 0.02), "tensorflow": (None, None)}
    row = next(line for line in render_markdown(doc).splitlines() if line.startswith("| trn-") and "pytorch" in line)
    assert "40% loaded" in row
