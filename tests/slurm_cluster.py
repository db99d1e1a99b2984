"""A real Slurm cluster for the tests, from Debian's packages: munged, slurmctld and slurmd, started here.

    with slurm_cluster(tmp) as cluster:             # skips (pytest.skip) where Slurm is not installed
        cluster.run(["srun", "--nodes", str(cluster.nodes), "--ntasks", "2", "hostname"])

Everything lives in `tmp`: a fresh munge key (1 KiB, mode 0400) and munged's
socket, a `slurm.conf` written here (no cgroup plugin: proctrack/linuxproc,
task/none; select/cons_tres), state, spool, pid and log files, and free ports.
Where network namespaces can be made (tests/two_hosts.py: root and iproute2),
the cluster has two nodes, lfnode0 and lfnode1, one per namespace, joined by a
veth pair at 198.18.0.1 and 198.18.0.2, and the controller on lfnode0; else one
node, this host, at 127.0.0.1 (`cluster.one_node_reason` says why). Daemons and
clients of a namespace run under `unshare --mount` + `nsenter --net` rather than
`ip netns exec`, which remounts /sys and so hides /sys/fs/cgroup, without which
Slurm 22.05's slurmd will not start even with no cgroup plugin; the mount
namespace gives each node its own /etc/hosts (/etc/netns/<name>/hosts) as
`ip netns exec` would. The daemons are stopped by their pid files at the end
(SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from two_hosts import ADDRESSES, Hosts, two_hosts, unavailable_reason

COMMANDS = ("munged", "munge", "slurmctld", "slurmd", "srun", "sbatch", "sinfo")
PACKAGES = "Debian: apt-get install slurm-wlm munge (`make test` installs them)"
NODE_NAMES = ("lfnode0", "lfnode1")  # Slurm writes them as lfnode[0-1] in a node list
START_TIMEOUT_S = 60  # munged, slurmctld and slurmd start in seconds; the nodes then report idle
STOP_GRACE_S = 10


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    nodes: int  # 2 in two network namespaces, else 1
    one_node_reason: str | None
    hosts: Hosts | None = None
    pid_files: list[Path] = field(default_factory=list)

    @property
    def env(self) -> dict:
        """The environment of a Slurm client of this cluster (srun, sbatch, sinfo)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def command(self, argv: list[str], node: int = 0) -> list[str]:
        """`argv` as run on node `node` (inside its namespace when there are two)."""
        if self.hosts is None:
            return list(argv)
        name = self.hosts.names[node]
        script = (
            'ns=$1; shift; mount --bind "/etc/netns/$ns/hosts" /etc/hosts && exec nsenter --net="/run/netns/$ns" "$@"'
        )
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", name, *argv]

    def run(self, argv: list[str], node: int = 0, timeout_s: float = 900, **kwargs) -> subprocess.CompletedProcess:
        """`argv` (srun ..., sbatch ...) on node `node`, its output captured as text."""
        return subprocess.run(
            self.command(argv, node), env=self.env, capture_output=True, text=True, timeout=timeout_s, **kwargs
        )


def missing_commands() -> list[str]:
    return [name for name in COMMANDS if shutil.which(name) is None]


@contextlib.contextmanager
def slurm_cluster(root: Path) -> Iterator[SlurmCluster]:
    missing = missing_commands()
    if missing:
        pytest.skip(f"Slurm is not installed here (no {', '.join(missing)}; {PACKAGES})")
    reason = unavailable_reason()
    with contextlib.ExitStack() as stack:
        hosts = None
        if reason is None:
            try:
                hosts = stack.enter_context(two_hosts(prefix="lfs", aliases=NODE_NAMES))
            except pytest.skip.Exception as skipped:  # namespaces, but no veth pair: one node
                reason = str(skipped.msg)
        cluster = _configure(root, hosts, reason)
        try:
            _start(cluster)
            yield cluster
        finally:
            _stop(cluster)


def _configure(root: Path, hosts: Hosts | None, reason: str | None) -> SlurmCluster:
    for folder in ("munge", "state", "log", *(f"spool/{n}" for n in (*NODE_NAMES, socket.gethostname()))):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    ctld_port, slurmd_port = _free_ports(2)
    if hosts is None:
        controller = f"{socket.gethostname()}(127.0.0.1)"
        node_lines = f"NodeName={socket.gethostname()} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN\n"
    else:
        controller = f"{socket.gethostname()}({ADDRESSES[0]})"  # slurmctld runs where the hostname says lfnode0 is
        node_lines = "".join(
            f"NodeName={name} NodeAddr={address} CPUs={os.cpu_count()} State=UNKNOWN\n"
            for name, address in zip(NODE_NAMES, ADDRESSES, strict=True)
        )
    conf = root / "slurm.conf"
    conf.write_text(
        f"ClusterName=levelfield\n"
        f"SlurmctldHost={controller}\n"
        f"SlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}\n"
        "SlurmUser=root\nSlurmdUser=root\n"
        f"AuthType=auth/munge\nAuthInfo=socket={root}/munge/munge.socket\nCredType=cred/munge\n"
        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"  # no cgroup plugin
        "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
        "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nMpiDefault=none\nReturnToService=2\n"
        f"StateSaveLocation={root}/state\nSlurmdSpoolDir={root}/spool/%n\n"
        f"SlurmctldPidFile={root}/slurmctld.pid\nSlurmdPidFile={root}/slurmd-%n.pid\n"
        f"SlurmctldLogFile={root}/log/slurmctld.log\nSlurmdLogFile={root}/log/slurmd-%n.log\n"
        f"{node_lines}"
        "PartitionName=levelfield Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
    )
    return SlurmCluster(root, conf, nodes=2 if hosts else 1, one_node_reason=reason, hosts=hosts)


def _start(cluster: SlurmCluster) -> None:
    root = cluster.root
    munge = root / "munge"
    munged = ["munged", "--force", f"--key-file={munge}/munge.key", f"--socket={munge}/munge.socket"]
    munged += [f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log", f"--seed-file={munge}/munged.seed"]
    cluster.pid_files.append(munge / "munged.pid")
    _daemon(cluster, munged, None)
    cluster.pid_files.append(root / "slurmctld.pid")
    _daemon(cluster, ["slurmctld", "-f", str(cluster.conf)], 0)
    names = NODE_NAMES[: cluster.nodes] if cluster.hosts else (socket.gethostname(),)
    for node, name in enumerate(names):
        cluster.pid_files.append(root / f"slurmd-{name}.pid")
        _daemon(cluster, ["slurmd", "-f", str(cluster.conf), "-N", name], node)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        states = cluster.run(["sinfo", "--noheader", "--Node", "--format=%T"], timeout_s=30).stdout.split()
        if len(states) == cluster.nodes and all(s == "idle" for s in states):
            return
        time.sleep(0.5)
    logs = "\n".join(f"{p.name}: {p.read_text()[-1500:]}" for p in sorted((root / "log").glob("*.log")))
    raise AssertionError(f"the Slurm nodes did not become idle (sinfo: {states}):\n{logs}")


def _daemon(cluster: SlurmCluster, argv: list[str], node: int | None) -> None:
    """Start a daemon (it forks into the background) and wait for its pid file."""
    command = argv if node is None else cluster.command(argv, node)
    result = subprocess.run(command, env=cluster.env, capture_output=True, text=True, timeout=START_TIMEOUT_S)
    assert result.returncode == 0, (command, result.stdout, result.stderr)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not cluster.pid_files[-1].exists():
        assert time.monotonic() < deadline, f"{argv[0]} wrote no pid file {cluster.pid_files[-1]}"
        time.sleep(0.1)


def _stop(cluster: SlurmCluster) -> None:
    """SIGTERM every daemon this cluster started, by its pid file (nodes first), SIGKILL what outlives the grace."""
    pids = []
    for pid_file in reversed(cluster.pid_files):
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text().split()[0])
            os.kill(pid, signal.SIGTERM)
            pids.append(pid)
    deadline = time.monotonic() + STOP_GRACE_S
    for pid in pids:
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a daemon this process started and that exited stays a zombie until reaped
        if Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z"):
            return False
    return True


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()
