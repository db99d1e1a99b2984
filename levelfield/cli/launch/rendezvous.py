"""How the hosts of one run find each other: node 0 serves, every host tells its address and ports.

    cluster = meet(layout, seed, run={...}, timeout_s=1800)   # on every host, with the same endpoint
    cluster.addresses[rank]                                     # "host:port" of every rank, in rank order

Each framework's engine needs more than node 0's address: TensorFlow's
TF_CONFIG lists every worker's host and port, JAX and PyTorch want a
coordinator (rank 0's address). So before any rank starts, every host's
launcher reserves one free port per local rank and connects to node 0's
endpoint; node 0's launcher answers each host once all have come, with every
rank's address, in rank order, and node 0's seed, so every rank of the run
uses the same seeds. A host's address is the one node 0 sees it connect from:
the address on the network the run uses, whatever the host calls itself.

Node 0 also compares what each host was asked to run (task, framework,
profile, recipe): two hosts started with different commands get one clear
error each instead of a run that mixes them. Messages are one JSON line each,
at most MAX_MESSAGE_BYTES; nothing received is executed. Every wait is bounded
by `timeout_s` (the task's init bound).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from dataclasses import dataclass

from levelfield.ground.errors import UserError
from levelfield.harness.world import Layout

MAX_MESSAGE_BYTES = 1 << 16
_RETRY_S = 0.5  # between attempts to reach node 0 while it starts
_REPLY_GRACE_S = 5.0  # a host waits this much longer than node 0 does, so node 0's verdict reaches it


@dataclass(frozen=True)
class Cluster:
    """Every rank's "host:port" (rank order; rank 0's is the coordinator) and the run's base seed."""

    addresses: list[str]
    seed: int

    def host_of(self, rank: int) -> str:
        return self.addresses[rank].rpartition(":")[0].strip("[]")

    def port_of(self, rank: int) -> int:
        return int(self.addresses[rank].rpartition(":")[2])


def free_ports(count: int, host: str = "") -> list[int]:
    """`count` distinct TCP ports free on `host` now (the OS picks them; they stay free until a rank binds)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def local_cluster(layout: Layout, seed: int) -> Cluster:
    """One host: every rank on the loopback address."""
    return Cluster(addresses=[f"127.0.0.1:{port}" for port in free_ports(layout.nproc, "127.0.0.1")], seed=seed)


def meet(layout: Layout, seed: int, run: dict, timeout_s: float) -> Cluster:
    """Agree with the other hosts of `layout` (node 0 serves at its endpoint); this host's view of the run."""
    host, port = layout.address()
    deadline = time.monotonic() + timeout_s + _REPLY_GRACE_S
    server = _Server(host, port, layout, run, timeout_s) if layout.node_rank == 0 else None
    try:
        hello = {"node_rank": layout.node_rank, "nproc": layout.nproc, "nnodes": layout.nnodes, "run": run}
        hello |= {"ports": free_ports(layout.nproc), "seed": seed}
        reply = _ask(host, port, hello, deadline, layout)
    finally:
        if server is not None:
            server.close()
    if "error" in reply:
        raise UserError(f"--rdzv-endpoint {layout.endpoint}: {reply['error']}")
    return Cluster(addresses=reply["addresses"], seed=reply["seed"])


def _ask(host: str, port: int, hello: dict, deadline: float, layout: Layout) -> dict:
    """Send this host's hello to node 0 (retrying while it is not up yet) and wait for its answer."""
    while True:
        try:
            with socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic())) as conn:
                conn.sendall(json.dumps(hello).encode() + b"\n")
                return _read_message(conn)
        except (TimeoutError, ConnectionRefusedError, ConnectionResetError, OSError) as error:
            if time.monotonic() + _RETRY_S >= deadline:
                raise UserError(
                    f"--rdzv-endpoint {layout.endpoint}: node {layout.node_rank} of {layout.nnodes} could not "
                    f"meet the other hosts before the task's init bound ({type(error).__name__}: {error})",
                    hint="start every host with the same --nnodes and --rdzv-endpoint (node 0's address)",
                ) from None
            time.sleep(_RETRY_S)


def _read_message(conn: socket.socket) -> dict:
    """One JSON line of at most MAX_MESSAGE_BYTES; a bad one is a ValueError."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(MAX_MESSAGE_BYTES)
        if not chunk:
            raise ConnectionResetError("the peer closed the connection before a whole message")
        data += chunk
        if len(data) > MAX_MESSAGE_BYTES:
            raise ValueError(f"message over {MAX_MESSAGE_BYTES} bytes")
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("message is not a JSON object")
    return message


class _Server:
    """Node 0's side: collect one hello per node, then answer all of them at once (a thread)."""

    def __init__(self, host: str, port: int, layout: Layout, run: dict, timeout_s: float):
        self.layout, self.run, self.timeout_s = layout, run, timeout_s
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as error:
            self.sock.close()
            raise UserError(
                f"--rdzv-endpoint {layout.endpoint}: node 0 cannot listen there ({error.strerror or error})",
                hint="on node 0, give an address of this host and a free port",
            ) from None
        self.sock.listen(layout.nnodes)
        self.thread = threading.Thread(target=self._serve, name="levelfield-rendezvous", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        hellos: dict[int, tuple[socket.socket, str, dict]] = {}
        problem = None
        try:
            while len(hellos) < self.layout.nnodes and time.monotonic() < deadline:
                self.sock.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    conn, peer = self.sock.accept()
                except (TimeoutError, OSError):
                    break
                try:
                    conn.settimeout(max(0.1, deadline - time.monotonic()))
                    hello = _read_message(conn)
                except (OSError, ValueError):
                    conn.close()  # not one of ours (a port scan, a broken client): ignore it
                    continue
                problem = problem or self._judge(hello, hellos)
                hellos.setdefault(hello.get("node_rank"), (conn, peer[0], hello))
            if problem is None and len(hellos) < self.layout.nnodes:
                problem = f"only {len(hellos)} of {self.layout.nnodes} hosts came before the task's init bound"
            reply = {"error": problem} if problem else self._plan(hellos)
            for conn, _, _ in hellos.values():
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps(reply).encode() + b"\n")
        finally:
            for conn, _, _ in hellos.values():
                conn.close()

    def _judge(self, hello: dict, hellos: dict) -> str | None:
        """Why `hello` cannot join this run, or None."""
        node = hello.get("node_rank")
        shape = (hello.get("nproc"), hello.get("nnodes"))
        expected = (self.layout.nproc, self.layout.nnodes)
        if not isinstance(node, int) or not 0 <= node < self.layout.nnodes:
            return f"a host gave node rank {node!r}, expected 0 to {self.layout.nnodes - 1}"
        if node in hellos:
            return f"two hosts gave --node-rank {node}"
        if shape != expected:
            return f"node {node} has --nproc {shape[0]} --nnodes {shape[1]}, node 0 has {expected[0]} and {expected[1]}"
        if hello.get("run") != self.run:
            return f"node {node} was asked to run {hello.get('run')}, node 0 {self.run}"
        ports = hello.get("ports")
        if not (isinstance(ports, list) and len(ports) == self.layout.nproc and all(isinstance(p, int) for p in ports)):
            return f"node {node} sent ports {ports!r}, expected {self.layout.nproc} port numbers"
        return None

    def _plan(self, hellos: dict) -> dict:
        addresses = []
        for node in range(self.layout.nnodes):
            _, host, hello = hellos[node]
            shown = f"[{host}]" if ":" in host else host
            addresses += [f"{shown}:{port}" for port in hello["ports"]]
        return {"addresses": addresses, "seed": hellos[0][2]["seed"]}

    def close(self) -> None:
        self.thread.join(timeout=self.timeout_s)
        self.sock.close()
