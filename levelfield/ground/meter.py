"""What one measured window of a run cost: memory, CPU, the host's load, energy; read while it runs.

    meter = ResourceMeter(sample_interval_ms=100, gpu=open_gpu_meter(1)).start()   # at run_start
    ...                                                                           # the timed work
    figures = meter.stop()       # {"peak_tree_rss_mib": 812.5, "others_cpu_share": 0.03, "cpu_energy_j": ..., ...}

A background thread wakes every `sample_interval_ms` and reads the summed resident memory of the run's
process tree (process_tree.py: the launcher and every descendant, DataLoader workers and ranks included),
the GPUs' used memory (NVML) and the CPU packages' energy counters (powercap.py, so that a counter wrap
between two readings is seen). Start and stop read the host's CPU time (/proc/stat) and the tree's, which
give the tree's and the other processes' shares of the host over the window. Each sample costs well under
a millisecond here (a few small /proc files per process: 0.07 ms for one process, 0.26 ms with the walk
of its tree); what metering costs the runner is what benchmarks/harness_efficiency.py measures (the
runner's Offline throughput against the raw predict loop, goal >= 0.97).

Energy comes from a meter or not at all: NVML's total-energy counter for the GPUs, RAPL for the CPU
packages; where neither exists the figure is NOT_MEASURED, and levelfield makes no estimate (docs/fairness.md,
The cost of a result). Peak memory is the highest sample: a spike shorter than the interval can pass unseen,
which is why the interval is recorded beside it.

Units are in the names: `_mib`, `_s`, `_j`; `_share` is a fraction (0-1) of the host's CPU time over the
window (all its CPUs together), so 0.5 on a 2-core host is one core's worth.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from levelfield.ground.host_load import cpu_jiffies
from levelfield.ground.powercap import PackageEnergy
from levelfield.ground.process_tree import TICKS_PER_S, ProcessTree

NOT_MEASURED = "not measured"  # an energy figure with no meter behind it (never an estimate)
# The tree's members are looked up again at most this often (s): a walk reads every member's task
# folders, while a memory sample reads one file per member. New workers start at the run's start.
MEMBERS_REFRESH_S = 1.0
_BYTES_PER_MIB = 2**20
_MJ_PER_J = 1000


def price_usd(hourly_price_usd: float, nodes: int, seconds: float) -> float:
    """What `seconds` of `nodes` nodes cost at the system description's hourly price per node."""
    return hourly_price_usd * nodes * seconds / 3600.0


def price_per_million_samples_usd(hourly_price_usd: float, nodes: int, seconds: float, samples: int) -> float | None:
    """The price of a million samples at the rate of a window that answered `samples` in `seconds`."""
    if samples <= 0:
        return None
    return price_usd(hourly_price_usd, nodes, seconds) / samples * 1e6


class ResourceMeter:
    """Reads a window's resource figures; `sample_interval_ms` None: no thread, start and stop readings only
    (the host's load, no peak memory worth the name)."""

    def __init__(
        self,
        sample_interval_ms: int | None,
        *,
        tree: ProcessTree | None = None,
        gpu: Any = None,  # levelfield.ground.accelerators.GpuMeter, or None (no GPU, no NVML)
        powercap_root: Path | None = None,
    ):
        self.interval_ms = sample_interval_ms
        self.tree = tree or ProcessTree.of_this_run()
        self.gpu = gpu
        self.powercap_root = powercap_root
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped: dict | None = None

    # -- the window ------------------------------------------------------------------------------
    def start(self) -> ResourceMeter:
        self._members = self.tree.members()
        self._members_at = time.monotonic()
        self._peak_rss, self._peak_processes, self._samples = 0, 0, 0
        self._peak_gpu_mib: float | None = None
        self._rapl = PackageEnergy.open(self.powercap_root)
        self._gpu_mj = self.gpu.energy_mj() if self.gpu is not None else None
        self._tree_cpu_s = self.tree.cpu_s(self._members)
        self._jiffies = cpu_jiffies()
        self._started = time.perf_counter()
        self._sample()
        if self.interval_ms:
            self._thread = threading.Thread(target=self._loop, name="levelfield-meter", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        interval_s = self.interval_ms / 1000
        while not self._stop.wait(interval_s):
            self._sample()

    def _sample(self) -> None:
        with self._lock:
            if time.monotonic() - self._members_at >= MEMBERS_REFRESH_S:
                self._members, self._members_at = self.tree.members(), time.monotonic()
            rss, answered = self.tree.rss_bytes(self._members)
            self._peak_rss = max(self._peak_rss, rss)
            self._peak_processes = max(self._peak_processes, answered)
            if self._rapl is not None:
                self._rapl.sample()
            if self.gpu is not None:
                used = self.gpu.memory_used_mib()
                if used is not None:
                    self._peak_gpu_mib = used if self._peak_gpu_mib is None else max(self._peak_gpu_mib, used)
            self._samples += 1

    def stop(self) -> dict:
        """The window's figures (once; a second call answers the same)."""
        if self._stopped is not None:
            return self._stopped
        window_s = time.perf_counter() - self._started
        jiffies = cpu_jiffies()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._members = self._members | self.tree.members()  # a process started since the last walk
        self._members_at = time.monotonic()
        self._sample()
        tree_cpu_s = max(0.0, self.tree.cpu_s(self._members) - self._tree_cpu_s)
        self._stopped = {
            "window_s": window_s,
            "sample_interval_ms": self.interval_ms,
            "samples": self._samples,
            "peak_tree_rss_mib": self._peak_rss / _BYTES_PER_MIB if self._peak_processes else None,
            "tree_processes": self._peak_processes or None,  # None: no process of the tree could be read
            "process_cpu_s": tree_cpu_s,
            **self._shares(self._jiffies, jiffies, tree_cpu_s),
            "cpu_energy_j": self._rapl.joules() if self._rapl is not None else NOT_MEASURED,
            "gpu_energy_j": self._gpu_energy_j(),
            "peak_device_memory_used_mib": self._peak_gpu_mib,
        }
        return self._stopped

    # -- figures ---------------------------------------------------------------------------------
    @staticmethod
    def _shares(start: tuple[int, int] | None, stop: tuple[int, int] | None, tree_cpu_s: float) -> dict:
        """The tree's, the whole host's and the other processes' shares of the host's CPU time; None where
        /proc/stat is unreadable or the window held no tick."""
        none = {"process_cpu_share": None, "host_cpu_share": None, "others_cpu_share": None}
        if start is None or stop is None:
            return none
        busy, total = stop[0] - start[0], stop[1] - start[1]
        if total <= 0:
            return none
        tree = tree_cpu_s * TICKS_PER_S
        clamp = lambda share: min(1.0, max(0.0, share))  # noqa: E731 - ticks are read at slightly different instants
        return {
            "process_cpu_share": clamp(tree / total),
            "host_cpu_share": clamp(busy / total),
            "others_cpu_share": clamp((busy - tree) / total),
        }

    def _gpu_energy_j(self) -> float | str:
        if self.gpu is None or self._gpu_mj is None:
            return NOT_MEASURED
        now = self.gpu.energy_mj()
        return NOT_MEASURED if now is None else (now - self._gpu_mj) / _MJ_PER_J
