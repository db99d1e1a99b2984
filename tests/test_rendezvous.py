"""levelfield's rendezvous between hosts (levelfield/cli/launch/rendezvous.py), on the loopback address.

Each "host" is a thread calling meet() as a launcher would; node 0 serves at the endpoint.
"""

from __future__ import annotations

import socket
import threading

import pytest

from levelfield.cli.launch.rendezvous import Cluster, free_ports, meet
from levelfield.ground.errors import UserError
from levelfield.harness.world import Layout

RUN = {"task_id": "ctr-dlrm", "framework": "jax", "profile": "smoke"}
TIMEOUT_S = 20


def meet_all(layouts: list[Layout], runs: list[dict], seeds: list[int]) -> list[Cluster | UserError]:
    """meet() on every layout at once, one thread each; each host's Cluster, or the UserError it raised."""
    results: list = [None] * len(layouts)

    def host(i: int) -> None:
        try:
            results[i] = meet(layouts[i], seeds[i], runs[i], timeout_s=TIMEOUT_S)
        except UserError as error:
            results[i] = error

    threads = [threading.Thread(target=host, args=(i,)) for i in range(len(layouts))]
    for thread in threads[::-1]:  # the other hosts first: they wait for node 0 to come up
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT_S * 2)
    return results


def layouts(nnodes: int, nproc: int = 2) -> list[Layout]:
    endpoint = f"127.0.0.1:{free_ports(1, '127.0.0.1')[0]}"
    return [Layout(nproc=nproc, nnodes=nnodes, node_rank=r, endpoint=endpoint) for r in range(nnodes)]


def test_every_host_learns_every_rank_address_and_node_0s_seed():
    clusters = meet_all(layouts(3), [RUN] * 3, seeds=[100, 200, 300])
    assert all(isinstance(c, Cluster) for c in clusters), clusters
    assert clusters[0] == clusters[1] == clusters[2]
    assert clusters[0].seed == 100, "node 0's seed is the run's"
    assert len(clusters[0].addresses) == 6  # 3 hosts x 2 ranks, rank order
    assert {clusters[0].host_of(rank) for rank in range(6)} == {"127.0.0.1"}
    assert len({clusters[0].port_of(rank) for rank in range(6)}) == 6


def test_hosts_started_with_different_commands_each_get_the_reason():
    other = {**RUN, "framework": "tensorflow"}
    clusters = meet_all(layouts(2), [RUN, other], seeds=[1, 1])
    for result in clusters:
        assert isinstance(result, UserError), result
        assert "node 1 was asked to run" in str(result) and "'tensorflow'" in str(result)


def test_a_different_process_count_is_refused():
    both = layouts(2)
    both[1] = Layout(nproc=1, nnodes=2, node_rank=1, endpoint=both[0].endpoint)
    results = meet_all(both, [RUN, RUN], seeds=[1, 1])
    assert all(isinstance(r, UserError) and "node 1 has --nproc 1 --nnodes 2" in str(r) for r in results), results


def test_a_missing_host_ends_the_wait_at_the_bound():
    only = layouts(2)[:1]
    with pytest.raises(UserError, match="only 1 of 2 hosts came"):
        meet(only[0], 1, RUN, timeout_s=1.5)


def test_node_0_must_own_the_endpoint_address():
    layout = Layout(nproc=1, nnodes=2, node_rank=0, endpoint="198.18.255.254:29400")  # not an address of this host
    with pytest.raises(UserError, match="node 0 cannot listen there"):
        meet(layout, 1, RUN, timeout_s=1)


def test_a_stranger_on_the_port_is_ignored():
    both = layouts(2)
    results: list = []
    server = threading.Thread(target=lambda: results.append(meet(both[0], 5, RUN, timeout_s=TIMEOUT_S)))
    server.start()
    host, port = both[0].address()
    for _ in range(50):  # wait for node 0 to listen, then send it garbage
        try:
            with socket.create_connection((host, port), timeout=1) as conn:
                conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
            break
        except ConnectionRefusedError:
            threading.Event().wait(0.1)
    other = meet(both[1], 6, RUN, timeout_s=TIMEOUT_S)
    server.join(TIMEOUT_S)
    assert results == [other] and other.seed == 5
