"""The nodes and processes each training run logged against the system it is filed under: SYS008.

A run's levelfield_nodes (absent: one node) must be the description's number_of_nodes, its
levelfield_world_size a multiple of those nodes, and its processes per node at most the node's
accelerators (its CPU threads on a CPU system). Each case edits every run of the example (one system
holds every result) and its description, resealed; a failing edit must give SYS008 alone, its passing
twin nothing at all. TRN020 compares levelfield_nodes between a result's runs, TRN017 holds it >= 1.
"""

from __future__ import annotations

import json

import pytest
from test_checker_fixtures import EXAMPLE, _training_log
from test_checker_identity import IDENTITY_EDITS

from levelfield.checker.engine import check_tree
from levelfield.ground import mllog_keys as LK
from tests.node_plants import log_nodes
from tests.submission_edit import copy_tree, edit_json, edit_mllog, reseal, set_value

# The example: one CPU node, one process per run (levelfield_nodes 1, or not logged by older trainers).
EXAMPLE_SYSTEM = json.loads(next(EXAMPLE.glob("*/*/systems/*.json")).read_text(encoding="utf-8"))
EXAMPLE_THREADS = EXAMPLE_SYSTEM["host_threads_per_node"]


def _unlog_nodes(log) -> None:
    """The log as a trainer before levelfield_nodes wrote it."""
    if f'"key": "{LK.NODES}"' in log.read_text(encoding="utf-8"):
        edit_mllog(log, LK.NODES, lambda e: None)


def _split_batch(log, world_size: int) -> None:
    """Each process's logged batch (where the log has one) the global batch over `world_size` processes,
    so that a run edited to more processes stays consistent in itself (else TRN022)."""
    text = log.read_text(encoding="utf-8")
    if f'"key": "{LK.LOCAL_BATCH_SIZE}"' not in text:
        return
    line = next(line for line in text.splitlines() if '"key": "global_batch_size"' in line)
    global_batch = json.loads(line.split(" ", 1)[1])["value"]
    edit_mllog(log, LK.LOCAL_BATCH_SIZE, set_value(global_batch // world_size))


def _tree(tmp_path, *, nodes: int | None = None, world_size: int | None = None, **system) -> tuple:
    """A resealed copy of the example with every run logging `nodes` (0: no levelfield_nodes line) and
    `world_size` (None: as it is), and the system description's keys set to `system`; (tree, its active
    findings)."""
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    for log in sorted(tree.rglob("training/result_*.txt")):
        if nodes == 0:
            _unlog_nodes(log)
        elif nodes is not None:
            log_nodes(log, nodes)
        if world_size is not None:
            edit_mllog(log, LK.WORLD_SIZE, set_value(world_size))
            _split_batch(log, world_size)
    if system:
        edit_json(next(tree.glob("*/*/systems/*.json")), lambda d: d.update(system))
    reseal(tree)
    return tree, check_tree(tree).active


def _sys008(findings, says: str) -> None:
    """Every finding is SYS008 saying `says`, one per run of the example."""
    assert {(f.code, says in f.message) for f in findings} == {("SYS008", True)}, [f.text() for f in findings]
    assert len(findings) == len(list(EXAMPLE.rglob("training/result_*.txt")))


# --- (a) the logged nodes are the declared number_of_nodes ----------------------------------------------
def test_runs_on_more_nodes_than_declared_give_sys008(tmp_path):
    _, findings = _tree(tmp_path, nodes=2, world_size=2)  # the description says 1
    _sys008(findings, f"{LK.NODES} differs from the number_of_nodes")
    assert {(f.found, f.expected) for f in findings} == {("2", "1")}
    assert all(f.line is not None and "example-box.json" in f.message for f in findings)


def test_a_description_declaring_more_nodes_than_the_runs_gives_sys008(tmp_path):
    """A log without levelfield_nodes (written before the key existed) ran on one node."""
    _, findings = _tree(tmp_path, nodes=0, number_of_nodes=2)
    _sys008(findings, f"{LK.NODES} differs from the number_of_nodes")
    assert {(f.found, f.expected) for f in findings} == {("1 (not logged: one node)", "2")}


@pytest.mark.parametrize("nodes", [1, 0], ids=["logged", "not-logged"])
def test_runs_on_the_declared_node_pass(nodes, tmp_path):
    assert _tree(tmp_path, nodes=nodes)[1] == []


def test_a_two_node_system_with_two_node_runs_passes(tmp_path):
    assert _tree(tmp_path, nodes=2, world_size=2, number_of_nodes=2)[1] == []


# --- (b) the same processes on every node -----------------------------------------------------------------
def test_a_world_size_not_a_multiple_of_the_nodes_gives_sys008(tmp_path):
    _, findings = _tree(tmp_path, nodes=2, world_size=3, number_of_nodes=2)
    _sys008(findings, "does not spread evenly over 2 nodes")
    assert {(f.found, f.expected) for f in findings} == {("3", "a multiple of 2 (the same processes on every node)")}


def test_a_world_size_spread_evenly_over_the_nodes_passes(tmp_path):
    assert _tree(tmp_path, nodes=2, world_size=2 * EXAMPLE_THREADS, number_of_nodes=2)[1] == []


# --- (c) at most one process per processing unit of a node ------------------------------------------------
def test_more_processes_per_node_than_cpu_threads_give_sys008(tmp_path):
    _, findings = _tree(tmp_path, world_size=EXAMPLE_THREADS + 1)
    _sys008(findings, "more processes per node than host_threads_per_node")
    assert {(f.found, f.expected) for f in findings} == {
        (f"{EXAMPLE_THREADS + 1} ({EXAMPLE_THREADS + 1} processes over 1 node)", f"<= {EXAMPLE_THREADS}")
    }


def test_the_example_is_one_process_on_one_cpu_node():
    """What the edits below start from."""
    assert (EXAMPLE_SYSTEM["number_of_nodes"], EXAMPLE_SYSTEM["accelerators_per_node"]) == (1, 0)
    for log in EXAMPLE.rglob("training/result_*.txt"):
        text = log.read_text(encoding="utf-8")
        assert f'"key": "{LK.WORLD_SIZE}", "value": 1,' in text, log
        assert f'"key": "{LK.NODES}"' not in text or f'"key": "{LK.NODES}", "value": 1,' in text, log


def test_one_process_per_cpu_thread_passes(tmp_path):
    assert _tree(tmp_path, world_size=EXAMPLE_THREADS)[1] == []


def _sys008_only(tree) -> list:
    # A description declaring accelerators the example's runs did not observe is also SYS001's and SYS005's.
    return check_tree(tree, select=["SYS008"]).active


def test_more_processes_per_node_than_accelerators_give_sys008(tmp_path):
    """A node with accelerators runs one process per accelerator, whatever its CPU threads."""
    tree, _ = _tree(tmp_path, world_size=2, accelerators_per_node=1, host_threads_per_node=64)
    findings = _sys008_only(tree)
    _sys008(findings, "more processes per node than accelerators_per_node")
    assert {(f.found, f.expected) for f in findings} == {("2 (2 processes over 1 node)", "<= 1")}


def test_one_process_per_accelerator_passes_beyond_the_cpu_threads(tmp_path):
    tree, _ = _tree(tmp_path, world_size=EXAMPLE_THREADS + 2, accelerators_per_node=EXAMPLE_THREADS + 2)
    assert _sys008_only(tree) == []


# --- levelfield_nodes in the other checks: between runs (TRN020), in its domain (TRN017) ------------------
@pytest.mark.parametrize("value", [0, "2", True])
def test_a_node_count_out_of_its_domain_gives_trn017(value, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    for log in sorted(tree.rglob("training/result_*.txt")):
        log_nodes(log, 1)
        edit_mllog(log, LK.NODES, set_value(value))
    reseal(tree)
    assert {f.code for f in check_tree(tree).active} == {"TRN017"}


def test_one_run_on_other_nodes_than_the_first_gives_trn020(tmp_path):
    # Every run logs one node; result_2 of one result says 2: unlike its first run, and unlike the system.
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    for log in sorted(tree.rglob("training/result_*.txt")):
        log_nodes(log, 1)
    log = _training_log(tree, 2)
    edit_mllog(log, LK.NODES, set_value(2))
    edit_mllog(log, LK.WORLD_SIZE, set_value(2))  # two nodes, one process each: only the nodes differ
    reseal(tree)
    found = {(f.code, LK.NODES in f.message) for f in check_tree(tree).active if f.path.endswith("result_2.txt")}
    assert ("TRN020", True) in found and ("SYS008", True) in found


def test_a_run_not_logging_the_nodes_the_first_run_logs_gives_trn020(tmp_path):
    """Absent is one node: a later run without the key is compared as 1 with the first run's 2."""
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    for log in sorted(_training_log(tree).parent.glob("result_*.txt")):
        if log.name.endswith("_2.txt"):
            _unlog_nodes(log)
        else:
            log_nodes(log, 2)
            edit_mllog(log, LK.WORLD_SIZE, set_value(2))
    reseal(tree)
    trn020 = [f for f in check_tree(tree, select=["TRN020"]).active if LK.NODES in f.message]
    assert [(f.path.rsplit("/", 1)[-1], f.found, f.expected) for f in trn020] == [
        ("result_2.txt", "1 (not logged)", "2")
    ]


def test_the_identity_edits_cover_every_identity_key():
    from levelfield.checker.checks.run_identity import IDENTITY_KEYS

    # levelfield_precision is a hyperparameter key: TRN016 compares it (tests/test_checker_edits.py);
    # levelfield_nodes may be absent from the example's logs: the two tests above add it where it is.
    assert set(IDENTITY_KEYS) - set(IDENTITY_EDITS) == {LK.PRECISION, LK.NODES}
