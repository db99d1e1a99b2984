"""The scaling efficiency in the leaderboard's throughput table, and `package` leaving a `--scaling` run's
1-process reference out (issue 35 item 7; the figure itself: levelfield/ground/scaling.py, tests/test_scaling.py).

    .venv/bin/python -m pytest tests/test_leaderboard_scaling.py -q

Logs as tests/test_checker_throughput_results.py writes them (the trainer's RunLog on a set clock, no step
run), one standard task, with the two `--scaling` keys added as the trainer logs them. About 20 s here.
"""

from __future__ import annotations

import shutil

import pytest
from test_checker_throughput_results import CODES, FRAMEWORKS, STEP_S, _batch, _log, make_tree

from levelfield.checker.engine import check_tree
from levelfield.ground import mllog_keys as LK
from levelfield.ground.scaling import REFERENCE_FOLDER
from levelfield.ground.validation import validate
from tests.node_plants import log_beside_world_size
from tests.submission_edit import reseal

TASK = "ctr-dlrm-standard"
PROCESSES = 2
REFERENCE = {"world_size": 1, "train_samples_per_s": 25000.0, "runs": 3, "seeds": [0, 1, 2], "folder": "x"}


def as_scaling_run(log, reference: dict) -> None:
    """The log of a run on PROCESSES processes with its 1-process reference, as `--scaling` logs them."""
    log_beside_world_size(log, LK.SCALING_REFERENCE, reference)
    log_beside_world_size(log, LK.WORLD_SIZE, PROCESSES)


def document(root):
    from levelfield.tools.leaderboard.collect import collect
    from levelfield.tools.leaderboard.document import build_document

    doc = build_document(
        collect([root], profile="smoke", check=lambda path, **kw: check_tree(path, select=CODES, **kw))
    )
    validate(doc, "leaderboard", "leaderboard.json")
    return doc


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    """A tree whose PyTorch result ran with --scaling; its repeats' samples/s and their mean."""
    root = make_tree(tmp_path_factory.mktemp("scaled") / "sub", [TASK])
    for i in range(3):
        as_scaling_run(_log(root, TASK, "pytorch", i), REFERENCE)
    reseal(root)
    return root


def test_the_throughput_row_recomputes_the_efficiency_from_its_samples_per_s_and_the_reference(scaled):
    doc = document(scaled)
    rows = {r["framework"]: r for r in doc["throughput"]}
    expected_mean = sum(_batch(TASK) / (STEP_S["pytorch"] * (1 + 0.02 * i)) for i in range(3)) / 3
    scaling = rows["pytorch"]["scaling"]
    assert rows["pytorch"]["processes"] == PROCESSES
    mean = rows["pytorch"]["train_samples_per_s"]["mean"]  # the windows' figures (test_checker_throughput_results)
    assert mean == pytest.approx(expected_mean, rel=1e-4)
    assert scaling["efficiency"] == mean / (PROCESSES * REFERENCE["train_samples_per_s"])  # recomputed, not read
    assert (scaling["reference_samples_per_s"], scaling["reference_runs"]) == (25000.0, 3)
    assert all(rows[fw]["scaling"] is None for fw in FRAMEWORKS if fw != "pytorch")  # no reference logged


def test_the_column_shows_where_a_row_has_it_in_every_format(scaled, tmp_path):
    from levelfield.tools.leaderboard import render

    doc = document(scaled)
    md, csv_text, html = (render(doc, fmt) for fmt in ("md", "csv", "html"))
    efficiency = next(r["scaling"]["efficiency"] for r in doc["throughput"] if r["scaling"])
    assert "scaling efficiency vs 1 process (its samples/s)" in md and f"{efficiency:.2f} (2.5e+04)" in md
    assert "throughput_scaling_efficiency" in csv_text.splitlines()[0] and repr(efficiency) in csv_text
    assert "scaling efficiency vs 1 process" in html
    plain = make_tree(tmp_path / "plain", [TASK])  # no --scaling result: no column (optional)
    assert "scaling efficiency" not in render(document(plain), "md")


def test_repeats_with_different_references_show_none(tmp_path):
    root = make_tree(tmp_path / "sub", [TASK])
    for i in range(3):
        as_scaling_run(_log(root, TASK, "pytorch", i), {**REFERENCE, "train_samples_per_s": 25000.0 + i})
    reseal(root)
    assert next(r for r in document(root)["throughput"] if r["framework"] == "pytorch")["scaling"] is None


def test_package_leaves_the_1_process_reference_out(tmp_path):
    """A --scaling run folder holds its reference's logs in scaling_reference/: not a result of its own."""
    from levelfield.tools.package import discover

    root = make_tree(tmp_path / "sub", [TASK])
    run = tmp_path / "runs" / "scaled"
    (run / REFERENCE_FOLDER).mkdir(parents=True)
    shutil.copy(_log(root, TASK, "pytorch", 0), run / "result_0.txt")
    shutil.copy(_log(root, TASK, "pytorch", 1), run / REFERENCE_FOLDER / "result_0.txt")
    trainings, _ = discover([tmp_path / "runs"])
    assert [t.source for t in trainings] == [run / "result_0.txt"]
    trainings, _ = discover([run / REFERENCE_FOLDER])  # named itself, it is packaged as any run folder
    assert [t.source for t in trainings] == [run / REFERENCE_FOLDER / "result_0.txt"]
