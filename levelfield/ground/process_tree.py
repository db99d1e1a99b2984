"""A run's own processes: the launcher and every descendant (DataLoader workers, ranks), or a cluster manager's job.

    tree = ProcessTree.of_this_run()        # rooted at $LEVELFIELD_LAUNCHER_PID, else this process
    pids = tree.members()                   # {pid, ...}: walked through /proc/<pid>/task/<tid>/children
    rss_bytes, count = tree.rss_bytes(pids) # summed resident memory of those processes, and how many answered
    cpu_s = tree.cpu_s(pids)                # their CPU time, their reaped children's included

Why a tree, not this process: a training run's DataLoader workers and its other ranks are the run's own
work, so their memory is the run's memory and their CPU time is not "other processes" loading the host
(docs/fairness.md, A busy host). `levelfield train --nproc N` sets LEVELFIELD_LAUNCHER_PID in every rank, so
rank 0 walks from the launcher and sees its peers. Under a cluster manager, which starts the ranks beside each
other rather than below one launcher, every process of the same job on this host counts too: under Slurm the
job step (SLURM_JOB_ID and SLURM_STEP_ID), under Open MPI's mpirun the job (OMPI_MCA_orte_hnp_uri, mpirun's
own address, and OMPI_MCA_ess_base_jobid), read from /proc/<pid>/environ, which a user can read for their own
processes only.

CPU time: the sum over live members of utime + stime + cutime + cstime (/proc/<pid>/stat, clock ticks). A
member that exits is reaped by its parent, whose cutime/cstime then hold its time, so no tick is counted
twice or lost while the parent lives in the tree. Linux only; elsewhere a tree is this process alone and
its figures come from psutil.
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil

LAUNCHER_PID_ENV = "LEVELFIELD_LAUNCHER_PID"  # set by levelfield/cli/launch in every rank it starts
SLURM_STEP_ENV = ("SLURM_JOB_ID", "SLURM_STEP_ID")
OPEN_MPI_JOB_ENV = ("OMPI_MCA_orte_hnp_uri", "OMPI_MCA_ess_base_jobid")  # the same in every rank of one mpirun
PROC = Path("/proc")
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
TICKS_PER_S = os.sysconf("SC_CLK_TCK")
# /proc/<pid>/stat after the ")" that ends the command name: state is field 3, utime..cstime fields 14-17.
_UTIME_FIELD = 14 - 3


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:  # the process ended, or is not ours to read
        return None


class ProcessTree:
    """The processes of one run on this host: descendants of `root`, plus `slurm_step`'s processes, plus those of
    `mpi_job` (OPEN_MPI_JOB_ENV's values)."""

    def __init__(
        self,
        root: int,
        slurm_step: tuple[str, str] | None = None,
        proc: Path = PROC,
        mpi_job: tuple[str, str] | None = None,
    ):
        self.root, self.slurm_step, self.mpi_job, self.proc = root, slurm_step, mpi_job, proc
        self._walkable = (proc / str(root) / "task").is_dir()

    @classmethod
    def of_this_run(cls, environ: dict[str, str] | os._Environ = os.environ) -> ProcessTree:
        """The tree of the run this process belongs to: from the launcher when it set LAUNCHER_PID_ENV (and
        is still alive: a stale value inherited from elsewhere falls back to this process)."""
        root = os.getpid()
        launcher = environ.get(LAUNCHER_PID_ENV, "")
        if launcher.isdigit() and psutil.pid_exists(int(launcher)):
            root = int(launcher)
        step = tuple(environ.get(name) for name in SLURM_STEP_ENV)
        job = tuple(environ.get(name) for name in OPEN_MPI_JOB_ENV)
        return cls(root, step if all(step) else None, mpi_job=job if all(job) else None)

    @property
    def described(self) -> str:
        """How the run's processes are found, for a reader of the record."""
        where = f"descendants of pid {self.root}"
        if self.slurm_step:
            where += f" and Slurm job {self.slurm_step[0]} step {self.slurm_step[1]}"
        if self.mpi_job:
            where += f" and Open MPI job {self.mpi_job[1]}"
        return where

    # -- who -------------------------------------------------------------------------------------
    def _children(self, pid: int) -> list[int]:
        found: list[int] = []
        try:
            tasks = os.listdir(self.proc / str(pid) / "task")
        except OSError:
            return found
        for tid in tasks:
            text = _read(self.proc / str(pid) / "task" / tid / "children")
            if text:
                found += [int(child) for child in text.split()]
        return found

    def descendants(self) -> set[int]:
        """The root and every process below it, alive now."""
        if not self._walkable:  # no /proc: psutil's walk (every process's parent, slower)
            try:
                root = psutil.Process(self.root)
                return {self.root, *(p.pid for p in root.children(recursive=True))}
            except psutil.Error:
                return set()
        seen, todo = set(), [self.root]
        while todo:
            pid = todo.pop()
            if pid not in seen and (self.proc / str(pid)).exists():
                seen.add(pid)
                todo += self._children(pid)
        return seen

    def _job_members(self, names: tuple[str, ...], values: tuple[str, ...]) -> set[int]:
        """The processes on this host whose environment holds every `names`=`values`."""
        wanted = {f"{name}={value}".encode() for name, value in zip(names, values, strict=True)}
        found = set()
        for entry in os.scandir(self.proc):
            if not entry.name.isdigit():
                continue
            try:
                environ = set((self.proc / entry.name / "environ").read_bytes().split(b"\0"))
            except OSError:
                continue
            if wanted <= environ:
                found.add(int(entry.name))
        return found

    def members(self) -> set[int]:
        """The run's processes alive now."""
        pids = self.descendants()
        if self.slurm_step:
            pids |= self._job_members(SLURM_STEP_ENV, self.slurm_step)
        if self.mpi_job:
            pids |= self._job_members(OPEN_MPI_JOB_ENV, self.mpi_job)
        return pids

    # -- what they use ---------------------------------------------------------------------------
    def rss_bytes(self, pids: set[int]) -> tuple[int, int]:
        """(summed resident bytes, processes that answered) of `pids` now."""
        total = answered = 0
        for pid in pids:
            text = _read(self.proc / str(pid) / "statm") if self._walkable else None
            if text is not None:
                fields = text.split()
                if len(fields) > 1:
                    total += int(fields[1]) * _PAGE_BYTES
                    answered += 1
            elif not self._walkable:
                try:
                    total += psutil.Process(pid).memory_info().rss
                    answered += 1
                except psutil.Error:
                    pass
        return total, answered

    def cpu_s(self, pids: set[int]) -> float:
        """CPU seconds of `pids` since each started, with the time of the children each has reaped."""
        ticks = 0.0
        for pid in pids:
            text = _read(self.proc / str(pid) / "stat") if self._walkable else None
            if text is not None:
                fields = text[text.rfind(")") + 2 :].split()
                if len(fields) > _UTIME_FIELD + 3:
                    ticks += sum(int(f) for f in fields[_UTIME_FIELD : _UTIME_FIELD + 4])
            elif not self._walkable:
                try:
                    t = psutil.Process(pid).cpu_times()
                    ticks += (t.user + t.system + t.children_user + t.children_system) * TICKS_PER_S
                except psutil.Error:
                    pass
        return ticks / TICKS_PER_S
