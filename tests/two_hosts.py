"""Two "hosts" on one machine: two Linux network namespaces joined by a veth pair, made and removed here.

    with two_hosts() as hosts:                     # skips (pytest.skip) where namespaces cannot be made
        hosts.run(0, ["python", "-c", "..."])      # a process inside host 0

The veth ends get addresses from 198.18.0.0/15, the range RFC 2544 reserves
for benchmarking, never from the private ranges a real network may use. Each
namespace sees only its veth end and its own loopback, so traffic goes only
between the two. Each host resolves this machine's hostname to its own
address (`ip netns exec` reads /etc/netns/<name>/hosts as /etc/hosts), as a
real host resolves its name: gloo, under PyTorch and JAX, finds the address
it listens on that way. Everything is removed on exit, also after a failure.

The addresses are fixed, so one pair exists at a time on this machine: `two_hosts` holds an exclusive lock
(flock on TURN_LOCK) from before it makes the pair until after it removes it, and a second user, in another
pytest-xdist worker or another pytest, waits for its turn.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ADDRESSES = ("198.18.0.1", "198.18.0.2")  # RFC 2544 benchmarking range, a /30 of two hosts
PREFIX = 30
NETNS_ETC = Path("/etc/netns")
TURN_LOCK = Path(tempfile.gettempdir()) / "levelfield-two-hosts.lock"


@dataclass
class Hosts:
    names: tuple[str, str]

    def command(self, node: int, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.names[node], *argv]

    def start(self, node: int, argv: list[str], **popen) -> subprocess.Popen:
        """`argv` inside host `node`, in a session of its own (so a test can kill the whole host)."""
        return subprocess.Popen(self.command(node, argv), start_new_session=True, **popen)

    def kill(self, node: int) -> None:
        """Every process inside host `node`, with SIGKILL: the host is gone."""
        pids = subprocess.run(["ip", "netns", "pids", self.names[node]], capture_output=True, text=True).stdout
        for pid in pids.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), 9)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def unavailable_reason() -> str | None:
    """Why network namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    probe = f"lfprobe{os.getpid() % 100000}"
    try:
        _ip("netns", "add", probe)
    except (subprocess.CalledProcessError, OSError) as error:
        return f"ip netns add failed: {getattr(error, 'stderr', '') or error}"
    _ip("netns", "del", probe)
    return None


@contextlib.contextmanager
def two_hosts(prefix: str = "lf", aliases: tuple[str, str] = ()) -> Iterator[Hosts]:
    """`prefix` keeps the namespaces of two users of this helper apart (the Slurm cluster's live as long as its module);
    each host resolves `aliases` (one name per host, e.g. Slurm's node names) to that host's address."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with turn():
        yield from _made(prefix, aliases)


@contextlib.contextmanager
def turn() -> Iterator[None]:
    """This process's turn at the fixed addresses: blocks while another process holds it."""
    with TURN_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _made(prefix: str, aliases: tuple[str, str]) -> Iterator[Hosts]:
    tag = os.getpid() % 100000
    names = (f"{prefix}{tag}a", f"{prefix}{tag}b")
    links = (f"{prefix}{tag}a0", f"{prefix}{tag}b0")  # interface names: at most 15 characters
    try:
        try:
            for name in names:
                _ip("netns", "add", name)
            _ip("link", "add", links[0], "type", "veth", "peer", "name", links[1])
            for name, link, address in zip(names, links, ADDRESSES, strict=True):
                _ip("link", "set", link, "netns", name)
                _ip("-n", name, "addr", "add", f"{address}/{PREFIX}", "dev", link)
                _ip("-n", name, "link", "set", link, "up")
                _ip("-n", name, "link", "set", "lo", "up")
                (NETNS_ETC / name).mkdir(parents=True, exist_ok=True)
                named = dict(zip(ADDRESSES, aliases, strict=False))  # no aliases: none
                mine = " ".join([socket.gethostname(), *([named[address]] if address in named else [])])
                others = "".join(f"{a} {alias}\n" for a, alias in named.items() if a != address)
                (NETNS_ETC / name / "hosts").write_text(f"127.0.0.1 localhost\n{address} {mine}\n{others}")
        except subprocess.CalledProcessError as error:  # namespaces, but no veth pair: no two hosts here
            pytest.skip(f"cannot join two network namespaces: {' '.join(error.cmd)}: {error.stderr.strip()}")
        yield Hosts(names)
    finally:
        hosts = Hosts(names)
        for node, name in enumerate(names):
            hosts.kill(node)  # nothing may keep running inside a namespace about to go
            with contextlib.suppress(subprocess.CalledProcessError, OSError):
                _ip("netns", "del", name)  # takes its veth end, and so the pair, with it
            shutil.rmtree(NETNS_ETC / name, ignore_errors=True)
