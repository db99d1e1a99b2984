"""The busy-host warning of `levelfield train` and `levelfield infer` (levelfield/ground/host_load.py).

The share is measured from /proc/stat, this process's own CPU time subtracted. The arithmetic is tested on
written /proc/stat lines; the measurement itself against real busy processes, one per CPU, so the share is
high on any host, however many cores it has and however busy it already was.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from levelfield.ground import host_load
from tests.conftest import run_cli

STAT = "cpu  {user} 0 {system} {idle} 0 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"


@pytest.fixture
def busy_host():
    """One pure-Python busy loop per CPU, for the length of a test."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    time.sleep(0.3)  # every loop running
    yield
    for loop in loops:
        loop.kill()
        loop.wait()


def _stat(tmp_path: Path, monkeypatch, **jiffies) -> None:
    path = tmp_path / "stat"
    path.write_text(STAT.format(**jiffies))
    monkeypatch.setattr(host_load, "PROC_STAT", path)


def test_the_share_is_others_busy_time_over_the_hosts_time_minus_this_processs_own(tmp_path, monkeypatch):
    hz = os.sysconf("SC_CLK_TCK")
    _stat(tmp_path, monkeypatch, user=1000, system=0, idle=1000)
    monkeypatch.setattr(host_load.time, "process_time", lambda: 0.0)
    watch = host_load.HostWatch()
    watch._wall_s -= 1.0  # a one-second window
    # 400 jiffies of 1000 were busy; this process used 100 of them: others used 300 / 1000.
    _stat(tmp_path, monkeypatch, user=1300, system=100, idle=1600)
    monkeypatch.setattr(host_load.time, "process_time", lambda: 100 / hz)
    assert watch.others_share() == pytest.approx(0.3)


@pytest.mark.parametrize("text", ["", "intr 1 2 3\n", "cpu  a b c d\n", "cpu  1 2\n"])
def test_an_unreadable_proc_stat_measures_nothing(tmp_path, monkeypatch, text):
    path = tmp_path / "stat"
    path.write_text(text)
    monkeypatch.setattr(host_load, "PROC_STAT", path)
    watch = host_load.HostWatch()
    watch._wall_s -= 1.0
    assert watch.others_share() is None


def test_too_short_a_window_says_nothing():
    watch = host_load.HostWatch()
    watch._wall_s = time.monotonic() + 1.0  # whatever the host's speed: the window is under MIN_WINDOW_S
    assert watch.others_share() is None


def test_the_warning_names_the_share_and_what_to_do():
    assert host_load.busy_host_warning(None, 2) is None
    assert host_load.busy_host_warning(host_load.BUSY_SHARE_WARNING, 2) is None
    text = host_load.busy_host_warning(0.81, 2)
    assert "other processes kept 81% of this host's 2 CPUs busy" in text and "run on an idle host" in text


@pytest.mark.skipif(not host_load.PROC_STAT.exists(), reason="no /proc/stat")
def test_busy_processes_on_every_cpu_are_measured(busy_host):
    watch = host_load.HostWatch()
    time.sleep(1.0)
    assert watch.others_share() > 0.5


@pytest.mark.skipif(not host_load.PROC_STAT.exists(), reason="no /proc/stat")
def test_infer_warns_when_the_host_is_busy(busy_host, tmp_path):
    result = run_cli(
        "infer", "--task", "ctr-dlrm", "--framework", "none", "--scenario", "singlestream", "--mode", "performance",
        "--profile", "smoke", "--quiet", "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "levelfield: warning: other processes kept" in result.stderr
