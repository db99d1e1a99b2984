"""How busy other processes keep the host: a measurement taken while a command starts, and its warning.

    watch_from_here()                      # the CLI's first step (reads /proc/stat)
    ...                                    # imports, option checks: this process's own work is subtracted
    warn_if_busy()                         # train / infer, just before the run: a line on stderr, or nothing

    HostWatch().others_share()             # the same measurement over any stretch of code

Why: a result must be valid, and a comparison fair, on any machine, but frameworks do not suffer a
busy host alike. On the 2-core CPU, ctr-dlrm predict beside one busy process per core fell to 0.11x in
PyTorch (whose OpenMP threads spin while they wait), 0.51x in TensorFlow and 0.69x in JAX, turning the
fastest framework alone into the slowest (benchmarks/busy_host.py; docs/fairness.md, A busy host).
A fair comparison needs an otherwise idle host; levelfield says so at the start of a run that does not
have one, when the user can still act.

Linux only (/proc/stat); elsewhere nothing is measured and nothing is said.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PROC_STAT = Path("/proc/stat")
# Others keeping more than this share of the host's CPU time busy earns a warning: on 2 cores, half a
# core of someone else's work (beside a full core's worth per core, PyTorch lost 9x: the module docstring).
BUSY_SHARE_WARNING = 0.25
MIN_WINDOW_S = 0.05  # a shorter window (a command that started in no time) says nothing reliable


def cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) jiffies of every CPU since boot, from /proc/stat's first line; None when unreadable."""
    try:
        first = PROC_STAT.read_text(encoding="ascii").splitlines()[0].split()
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    if first[:1] != ["cpu"] or len(first) < 5:
        return None
    try:
        fields = [int(x) for x in first[1:]]
    except ValueError:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


class HostWatch:
    """The host's CPU time and this process's own, from construction to each `others_share()` call."""

    def __init__(self) -> None:
        self._start = cpu_jiffies()
        self._own_s = time.process_time()
        self._wall_s = time.monotonic()

    def others_share(self) -> float | None:
        """Share (0-1) of the host's CPU time that other processes used since construction; None when not
        measurable (no /proc/stat, or too short a window)."""
        now = cpu_jiffies()
        if self._start is None or now is None or time.monotonic() - self._wall_s < MIN_WINDOW_S:
            return None
        busy, total = now[0] - self._start[0], now[1] - self._start[1]
        if total <= 0:
            return None
        own = (time.process_time() - self._own_s) * os.sysconf("SC_CLK_TCK")  # this process's threads, in jiffies
        return min(1.0, max(0.0, (busy - own) / total))


def busy_host_warning(share: float | None, cpus: int | None) -> str | None:
    """One line for stderr when other processes keep the host busy, else None."""
    if share is None or share <= BUSY_SHARE_WARNING:
        return None
    return (
        f"levelfield: warning: other processes kept {share:.0%} of this host's {cpus or '?'} CPUs busy as this "
        "run started; they take cores from it, and not alike from every framework (PyTorch's OpenMP threads "
        "most), so its figures would not compare fairly: run on an idle host (docs/fairness.md, A busy host)"
    )


_since_start: HostWatch | None = None


def watch_from_here() -> None:
    """Start the watch a command's `warn_if_busy()` reads (the CLI calls this before anything else)."""
    global _since_start
    _since_start = HostWatch()


def warn_if_busy() -> float | None:
    """Print busy_host_warning to stderr when it applies; the share measured since watch_from_here()."""
    import sys

    share = _since_start.others_share() if _since_start is not None else None
    warning = busy_host_warning(share, os.cpu_count())
    if warning:
        print(warning, file=sys.stderr)
    return share
