"""The resource meter (levelfield/ground/meter.py) and the run's process tree, with real processes.

Busy loops are real `python -c 'while True: pass'` processes started by the test: below the metering
process (the run's own work, e.g. DataLoader workers) or outside it (other work on the host). This machine
is shared, so other processes may load it at any time: the tests assert what the meter attributes to the
run and to the others, never that the host was idle. Energy meters this machine lacks are faked: a
powercap tree in a temporary folder (RAPL) and tests/fakes/fake_pynvml.py (NVML).
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import time

import psutil
import pytest
from test_trainer_gpu import FakeDevice, fake_pynvml, importer

from levelfield.ground.accelerators import open_gpu_meter
from levelfield.ground.meter import NOT_MEASURED, ResourceMeter, price_per_million_samples_usd, price_usd
from levelfield.ground.powercap import POWERCAP_DIR_ENV, PackageEnergy
from levelfield.ground.process_tree import LAUNCHER_PID_ENV, ProcessTree

BUSY = [sys.executable, "-c", "while True: pass"]
MIB = 2**20


def cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def host_cpu_s(figures: dict, share: str) -> float:
    """A share of the host's CPU time over the window, back in CPU seconds."""
    return figures[share] * figures["window_s"] * os.cpu_count()


def detached(command: str, env: dict | None = None) -> int:
    """The id of `command` started through `sh -c '... &'`: left to init, another job on the host, not a child
    of this run."""
    return int(
        subprocess.run(
            ["sh", "-c", f"{command} >/dev/null 2>&1 & echo $!"], capture_output=True, text=True, check=True, env=env
        ).stdout
    )


@pytest.fixture
def started():
    """Processes a test starts; killed (each by its id) when it ends."""
    procs: list[int] = []
    yield procs
    for pid in procs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def test_the_trees_memory_and_cpu_include_a_child_and_leave_it_out_of_others(started):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    meter = ResourceMeter(20).start()
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "x = bytearray(200 * 2**20)\nimport time; t = time.time()\nwhile time.time() - t < 1.5: pass",
        ]
    )
    started.append(child.pid)
    child.wait()
    figures = meter.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert figures["peak_tree_rss_mib"] > 200  # the child's 200 MiB, sampled while it lived
    assert figures["tree_processes"] >= 2 and figures["samples"] > 10 and figures["sample_interval_ms"] == 20
    # the child's CPU time (reaped: now in this process's cutime) is the run's, not other processes'
    assert child_s > 0.1 and figures["process_cpu_s"] >= 0.9 * child_s


def test_a_busy_loop_outside_the_tree_is_other_processes_load(started):
    meter = ResourceMeter(50).start()
    # `sh -c '... &'` leaves the loop to init: another job on the host, not a child of the run
    pid = detached(f"{' '.join(BUSY[:2])} '{BUSY[2]}'")
    started.append(pid)
    time.sleep(1.5)
    busy_s = cpu_s(pid)
    figures = meter.stop()
    assert busy_s > 0.2, "the busy loop got no CPU at all"
    assert pid not in ProcessTree.of_this_run().members()
    assert host_cpu_s(figures, "others_cpu_share") >= 0.8 * busy_s
    assert figures["process_cpu_s"] < 0.5 * busy_s


def test_a_busy_child_is_the_runs_own_work(started):
    meter = ResourceMeter(50).start()
    child = subprocess.Popen(BUSY)
    started.append(child.pid)
    time.sleep(1.5)
    busy_s = cpu_s(child.pid)
    figures = meter.stop()
    assert busy_s > 0.2
    assert figures["process_cpu_s"] >= 0.8 * busy_s
    assert host_cpu_s(figures, "process_cpu_share") >= 0.8 * busy_s


def test_the_tree_walks_from_the_launcher_and_falls_back_from_a_stale_one():
    assert ProcessTree.of_this_run({LAUNCHER_PID_ENV: str(os.getppid())}).root == os.getppid()
    assert os.getpid() in ProcessTree.of_this_run({LAUNCHER_PID_ENV: str(os.getppid())}).members()
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    assert ProcessTree.of_this_run({LAUNCHER_PID_ENV: str(dead.pid)}).root == os.getpid()


def test_a_slurm_job_step_counts_its_processes_outside_the_tree(started):
    env = {**os.environ, "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "7"}
    pid = detached(f"{sys.executable} -c 'import time; time.sleep(60)'", env)
    started.append(pid)
    time.sleep(0.2)
    step = ProcessTree.of_this_run({"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "7"})
    assert step.slurm_step == ("4242", "7") and pid in step.members() and "Slurm job 4242 step 7" in step.described
    assert pid not in ProcessTree(os.getpid(), ("4242", "8")).members()  # another step of the job
    assert pid not in ProcessTree.of_this_run({}).members()


def test_an_open_mpi_job_counts_its_ranks_outside_the_tree(started):
    """mpirun starts the ranks below itself, not below rank 0: rank 0 finds them by mpirun's job."""
    job = {"OMPI_MCA_orte_hnp_uri": "1792409600.0;tcp://192.0.2.2:36699", "OMPI_MCA_ess_base_jobid": "1792409601"}
    pid = detached(f"{sys.executable} -c 'import time; time.sleep(60)'", {**os.environ, **job})
    started.append(pid)
    time.sleep(0.2)
    tree = ProcessTree.of_this_run(job)
    assert pid in tree.members() and "Open MPI job 1792409601" in tree.described
    other = {**job, "OMPI_MCA_ess_base_jobid": "1792409602"}  # another mpirun's ranks
    assert pid not in ProcessTree.of_this_run(other).members()
    assert pid not in ProcessTree.of_this_run({}).members()


# -- energy: RAPL through a fake powercap tree, NVML through the fake module ------------------------
def zone(root, name: str, energy_uj: int | None, top_uj: int = 1000) -> None:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    if energy_uj is not None:
        (folder / "energy_uj").write_text(f"{energy_uj}\n")
    (folder / "max_energy_range_uj").write_text(f"{top_uj}\n")


def test_package_energy_adds_packages_counts_wraps_and_leaves_subzones_out(tmp_path):
    zone(tmp_path, "intel-rapl:0", 900)
    zone(tmp_path, "intel-rapl:1", 100)
    zone(tmp_path, "intel-rapl:0:0", 500)  # the cores of package 0: inside its count already
    zone(tmp_path, "intel-rapl:2", None)  # energy_uj unreadable (root-only since Linux 5.10): no meter there
    rapl = PackageEnergy.open(tmp_path)
    assert [z.path.name for z in rapl.zones] == ["intel-rapl:0", "intel-rapl:1"]
    zone(tmp_path, "intel-rapl:0", 100)  # wrapped past 1000: 100 to the top, then 100
    zone(tmp_path, "intel-rapl:0:0", 900)
    rapl.sample()
    zone(tmp_path, "intel-rapl:0", 400)  # and on
    zone(tmp_path, "intel-rapl:1", 350)
    assert rapl.joules() == pytest.approx((200 + 300 + 250) / 1e6)


def test_no_powercap_tree_means_no_package_meter(tmp_path):
    assert PackageEnergy.open(tmp_path / "absent") is None
    zone(tmp_path, "intel-rapl:0", None)
    assert PackageEnergy.open(tmp_path) is None


def test_the_meter_reads_rapl_where_pointed_and_says_not_measured_elsewhere(tmp_path, monkeypatch):
    zone(tmp_path, "intel-rapl:0", 10_000_000, top_uj=2**32)
    monkeypatch.setenv(POWERCAP_DIR_ENV, str(tmp_path))
    meter = ResourceMeter(10).start()
    zone(tmp_path, "intel-rapl:0", 40_000_000, top_uj=2**32)
    time.sleep(0.05)
    assert meter.stop()["cpu_energy_j"] == pytest.approx(30.0)
    monkeypatch.setenv(POWERCAP_DIR_ENV, str(tmp_path / "absent"))
    figures = ResourceMeter(None).start().stop()
    assert figures["cpu_energy_j"] == NOT_MEASURED and figures["gpu_energy_j"] == NOT_MEASURED


@pytest.mark.skipif(not os.path.isdir("/sys/class/powercap"), reason="no /sys/class/powercap here (a VM)")
def test_the_real_powercap_tree_is_read_where_it_is_readable():
    rapl = PackageEnergy.open()
    figures = ResourceMeter(None).start().stop()
    assert (figures["cpu_energy_j"] == NOT_MEASURED) == (rapl is None)


def test_the_meter_reads_nvml_energy_and_the_peak_of_gpu_memory():
    device = FakeDevice("NVIDIA H200", 141 * 2**30, 700_000, energy_mj=1_000_000, memory_used_bytes=2 * 2**30)
    gpu = open_gpu_meter(1, importer(fake_pynvml.build([device])), environ={})
    meter = ResourceMeter(10, gpu=gpu).start()
    device.memory_used_bytes = 9 * 2**30  # a peak the samples see ...
    time.sleep(0.1)
    device.memory_used_bytes = 3 * 2**30  # ... and leave
    device.energy_mj += 250_000
    figures = meter.stop()
    assert figures["gpu_energy_j"] == pytest.approx(250.0)
    assert figures["peak_device_memory_used_mib"] == pytest.approx(9 * 1024)


def test_prices_per_run_and_per_million_samples():
    assert price_usd(3.6, 2, 100.0) == pytest.approx(0.2)
    assert price_per_million_samples_usd(3.6, 1, 10.0, 50_000) == pytest.approx(0.2)
    assert price_per_million_samples_usd(3.6, 1, 10.0, 0) is None
