"""The leaderboard on small synthetic trees: rows, statistics, Welch marks, ids, and every format.

    .venv/bin/python -m pytest tests/test_leaderboard.py -q

The trees here are written by `write_tree` with only the files the leaderboard
reads, and "checked" by `clean_check`, a stand-in that passes every tree: a
tree the real checker passes needs submission-profile runs (minutes of CPU),
so the end-to-end path with the real checker is in test_leaderboard_example.py
(against submissions/example) and test_leaderboard_cli.py (real check, tree
left out). Numbers are pinned: run times in whole milliseconds, statistics
checked against hand computation.
"""

from __future__ import annotations

import csv
import html
import io
import json
from pathlib import Path

import pytest

from levelfield.checker.engine import Report
from levelfield.checker.findings import ERROR, WARNING, Finding
from levelfield.ground.errors import UserError
from levelfield.tools.leaderboard import render
from levelfield.tools.leaderboard.collect import collect
from levelfield.tools.leaderboard.columns import tables
from levelfield.tools.leaderboard.document import build_document

TASK = "ctr-dlrm"
START_MS = 1_800_000_000_000
# Seconds to target per run; None = a run that stopped without reaching the target.
PYTORCH_S = [10.0, 10.5, 11.0, 11.5, 12.0]
JAX_S = [10.2, 10.8, 11.2, 11.6, 12.4]  # within noise of pytorch
TENSORFLOW_S = [20.0, 21.0, 22.0, 23.0, None]  # slower beyond noise; one failed run
VERSIONS = {"pytorch": "2.13.0", "jax": "0.10.2", "tensorflow": "2.21.0"}
# Inference repeats (one LoadGen run per run_<i>/): Offline samples/s, SingleStream p90 ms.
PYTORCH_OFFLINE = [5000.0, 5100.0, 4900.0]
JAX_OFFLINE = [6500.5, 6600.5, 6400.5]  # the best, beyond noise of pytorch
TENSORFLOW_OFFLINE = [6450.0, 6700.0, 6250.0]  # within noise of jax
PYTORCH_SINGLESTREAM_MS = [0.25, 0.26, 0.24]


PROCESS_KEYS = ("levelfield_world_size", "levelfield_nodes")


def mllog(key, value=None, time_ms=START_MS, **metadata) -> str:
    entry = {
        "namespace": "",
        "time_ms": time_ms,
        "event_type": "POINT_IN_TIME",
        "key": key,
        "value": value,
        "metadata": {"file": "synthetic", "lineno": 0, **metadata},
    }
    return ":::MLLOG " + json.dumps(entry)


def logged_throughput(seed: int) -> tuple[float, float]:
    """(levelfield_train_samples_per_s, levelfield_step_time_ms) a synthetic run logs: a different pair per seed."""
    return 1000.0 + 100 * (seed % 7), 50.0 + seed % 7


def training_log(
    framework: str, seed: int, seconds: float | None, *, energy_j=None, processes=(None, None), throughput=False
) -> str:
    """processes: the (levelfield_world_size, levelfield_nodes) values to log, None leaving a key out;
    throughput: log logged_throughput(seed)."""
    status = "success" if seconds is not None else "aborted"
    stop_ms = START_MS + round((seconds if seconds is not None else 99.0) * 1000)
    lines = [
        mllog("seed", seed, START_MS - 3000),
        mllog("levelfield_framework_version", VERSIONS[framework], START_MS - 2000),
        mllog("levelfield_compile_mode", "compiled", START_MS - 2000),
        mllog("global_batch_size", 1024, START_MS - 2000),
        *(
            mllog(key, value, START_MS - 2000)
            for key, value in zip(PROCESS_KEYS, processes, strict=True)
            if value is not None
        ),
        mllog("levelfield_time_to_first_step_s", 1.5 + seed % 2, START_MS - 1),
        mllog("run_start", None, START_MS),
        mllog("eval_accuracy", 0.83 if seconds is not None else 0.70, stop_ms - 5, epoch_num=2),
        mllog("levelfield_peak_rss_mib", 400.0 + seed % 5, stop_ms - 1),
    ]
    if energy_j is not None:
        lines.append(mllog("levelfield_energy_j", energy_j, stop_ms - 1))
    if throughput:
        samples_per_s, step_ms = logged_throughput(seed)
        lines.append(mllog("levelfield_train_samples_per_s", samples_per_s, stop_ms - 1))
        lines.append(mllog("levelfield_step_time_ms", step_ms, stop_ms - 1))
    lines.append(mllog("run_stop", None, stop_ms, status=status))
    return "\n".join(lines) + "\n"


def system_description(org: str, name: str, price: float | None) -> dict:
    data = {
        "submitter": org,
        "system_name": name,
        "division": "closed",
        "status": "available",
        "number_of_nodes": 1,
        "host_processor_model_name": "Test CPU 2000",
        "accelerators_per_node": 0,
        "accelerator_model_name": "none",
    }
    if price is not None:
        data["hourly_price_usd"] = price
    return data


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_tree(
    root: Path,
    *,
    org: str = "acme",
    system: str = "box",
    name: str = "Acme box",
    price: float | None = 3.6,
    training: dict | None = None,
    inference: dict | None = None,
    energy_j: float | None = None,
    processes: tuple = (None, None),
    throughput: bool = False,
) -> Path:
    """A tree in the submission layout holding only what the leaderboard reads.

    training: {framework: [seconds or None per run]}; inference: {framework: {scenario: [value per
    repeat]}} where a value is samples/s (server, offline) or ms (singlestream, multistream), written
    into performance/run_<i>/mlperf_log_detail.txt.
    """
    training = {"pytorch": PYTORCH_S, "jax": JAX_S, "tensorflow": TENSORFLOW_S} if training is None else training
    inference = (
        {
            "pytorch": {"offline": PYTORCH_OFFLINE, "singlestream": PYTORCH_SINGLESTREAM_MS},
            "jax": {"offline": JAX_OFFLINE},
        }
        if inference is None
        else inference
    )
    base = root / "closed" / org
    write(root / "MANIFEST", "")
    write(base / "systems" / f"{system}.json", json.dumps(system_description(org, name, price)))
    write(base / "code" / "levelfield.json", json.dumps({"rules_version": "1.0"}))
    for framework, runs in training.items():
        for i, seconds in enumerate(runs):
            write(
                base / "results" / system / TASK / framework / "training" / f"result_{i}.txt",
                training_log(
                    framework, 2000 + i, seconds, energy_j=energy_j, processes=processes, throughput=throughput
                ),
            )
    for framework, scenarios in inference.items():
        for scenario, values in scenarios.items():
            folder = base / "results" / system / TASK / framework / scenario
            for i, value in enumerate(values, start=1):
                write(folder / "performance" / f"run_{i}" / "mlperf_log_detail.txt", detail_log(scenario, value))
            write(
                folder / "performance" / "result.json",
                json.dumps({"framework_version": VERSIONS[framework], "compile_mode": "compiled"}),
            )
            write(
                folder / "accuracy" / "accuracy.json",
                json.dumps({"metric": "roc_auc", "value": 0.8251, "threshold": 0.81774, "pass": True}),
            )
    return root


def detail_log(scenario: str, value: float) -> str:
    """A LoadGen detail log holding only the scenario's metric line."""
    if scenario in ("singlestream", "multistream"):
        pct = "90.00" if scenario == "singlestream" else "99.00"
        kind = "per_query_latency_ns" if scenario == "multistream" else "latency_ns"
        detail = {f"result_{pct}_percentile_{kind}": round(value * 1e6)}
    else:
        detail = {"result_samples_per_second" if scenario == "offline" else "result_completed_samples_per_sec": value}
    return "\n".join(mllog(k, v) for k, v in detail.items()) + "\n"


def _loaded(path) -> dict:
    from levelfield.ground.submission.loader import load_submission
    from levelfield.ground.submission.tree import read_tree
    from levelfield.rules import load_suite

    suite = load_suite("1.0")
    return {"submission": load_submission(read_tree(Path(path)), suite), "suite": suite}


def clean_check(path, **_options) -> Report:
    """Stands in for check_tree: every tree passes."""
    return Report(str(path), "1.0", [], **_loaded(path))


def checker_saying(*findings: Finding):
    def check(path, **_options) -> Report:
        return Report(str(path), "1.0", [], findings=list(findings), **_loaded(path))

    return check


def finding(code: str, severity: str = ERROR) -> Finding:
    return Finding(path=".", message="planted", code=code, name="planted", severity=severity)


def document(*roots: Path, check=clean_check) -> dict:
    return build_document(collect(list(roots), check=check))


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return write_tree(tmp_path_factory.mktemp("lb") / "acme")


@pytest.fixture(scope="module")
def doc(tree) -> dict:
    return document(tree)


def row(doc: dict, framework: str, kind: str = "training") -> dict:
    return next(r for r in doc[kind] if r["framework"] == framework)


# -- rows and statistics ----------------------------------------------------------------------


def test_time_to_train_per_run_is_run_stop_minus_run_start(doc):
    runs = row(doc, "pytorch")["run_details"]
    assert [r["time_to_target_s"] for r in runs] == PYTORCH_S
    assert [r["file"] for r in runs] == [f"result_{i}.txt" for i in range(5)]
    assert [r["seed"] for r in runs] == [2000, 2001, 2002, 2003, 2004]
    assert runs[0]["epochs_to_target"] == 2


def test_failed_run_counts_as_the_slowest_in_the_olympic_score(doc):
    tf = row(doc, "tensorflow")
    assert (tf["runs"], tf["failed_runs"]) == (5, 1)
    assert tf["run_details"][4] == {**tf["run_details"][4], "status": "aborted", "time_to_target_s": None}
    t = tf["time_to_target_s"]
    # MLPerf: [20, 21, 22, 23, failed] -> drop 20 and the failed run -> mean(21, 22, 23) = 22.
    # (Dropping among successes only would give mean(21, 22) = 21.5.)
    assert t["olympic_mean"] == pytest.approx(22.0)
    assert (t["n"], t["mean"]) == (4, pytest.approx(21.5))


def test_time_statistics_are_pinned(doc):
    t = row(doc, "pytorch")["time_to_target_s"]
    assert t["olympic_mean"] == pytest.approx(11.0)
    assert t["mean"] == pytest.approx(11.0)
    assert t["stdev"] == pytest.approx(0.7905694150420949)  # sqrt(2.5 / 4)
    # t(0.975, 4) = 2.7764451052; half width = 2.7764451052 * 0.7905694150 / sqrt(5) = 0.9816216
    assert t["ci95_low"] == pytest.approx(10.0183784, abs=1e-7)
    assert t["ci95_high"] == pytest.approx(11.9816216, abs=1e-7)
    assert (t["n"], t["olympic_drop"]) == (5, 1)


def test_measurements_per_row(doc):
    r = row(doc, "pytorch")
    assert r["time_to_first_step_s"] == pytest.approx((1.5 + 2.5 + 1.5 + 2.5 + 1.5) / 5)
    assert r["peak_host_memory_mib"] == 404.0  # the largest over the runs
    assert (r["peak_device_memory_mib"], r["energy_per_run_j"]) == (None, None)
    assert (r["framework_version"], r["compile_mode"], r["global_batch_size"]) == ("2.13.0", "compiled", 1024)
    assert (r["cpu"], r["accelerator"], r["accelerator_count"]) == ("Test CPU 2000", None, 0)


@pytest.mark.parametrize(
    "logged, shown",
    [((4, 2), "2 x 2 nodes"), ((2, None), "2 x 1 node"), ((None, None), "–")],
    ids=["two-nodes", "nodes-not-logged", "nothing-logged"],
)
def test_processes_are_the_logged_world_size_over_the_logged_nodes(logged, shown, tmp_path):
    """levelfield_nodes absent is one node (logs written before the key existed); the row keeps both keys."""
    from levelfield.ground.validation import problems

    doc = document(write_tree(tmp_path / "p", training={"jax": JAX_S}, inference={}, processes=logged))
    total, nodes = logged
    assert (row(doc, "jax")["processes"], row(doc, "jax")["process_nodes"]) == (total, nodes or 1)
    assert problems(json.loads(render(doc, "json")), "leaderboard") == []
    md = render(doc, "md")
    assert "processes (per node x nodes)" in md and f"| {shown} " in md
    page = render(doc, "html")
    assert "<th>processes (per node x nodes)</th>" in page and f"<td>{shown}</td>" in page
    line = next(csv.DictReader(io.StringIO(render(doc, "csv"))))
    assert (line["processes"], line["process_nodes"]) == (str(total or ""), str(nodes or 1))


def test_frameworks_on_different_processes_are_not_compared(tmp_path):
    """Welch compares frameworks on one layout: two processes against one would compare the layouts."""

    def two_trees(jax_processes: tuple) -> dict:
        one = write_tree(
            tmp_path / f"{jax_processes}-pt", training={"pytorch": PYTORCH_S}, inference={}, processes=(1, 1)
        )
        two = write_tree(
            tmp_path / f"{jax_processes}-jax", training={"jax": JAX_S}, inference={}, processes=jax_processes
        )
        return document(one, two)

    assert row(two_trees((1, 1)), "jax")["vs_fastest"] is not None  # the same system, one process each
    mixed = two_trees((2, 1))
    assert row(mixed, "jax")["vs_fastest"] is None and row(mixed, "pytorch")["vs_fastest"] is None
    assert mixed["comparisons"] == []


def test_throughput_is_the_median_run_beside_the_time_to_target(tmp_path):
    """The typical run's samples/s and step time, in the JSON, both pages and the CSV; hidden where no log has them."""
    from levelfield.ground.validation import problems

    doc = document(write_tree(tmp_path / "t", training={"jax": JAX_S}, inference={}, throughput=True))
    rates = sorted(logged_throughput(2000 + i) for i in range(len(JAX_S)))
    typical = rates[len(rates) // 2]  # JAX_S has an odd number of runs: the median is one of them
    assert (row(doc, "jax")["train_samples_per_s"], row(doc, "jax")["step_time_ms"]) == typical
    assert problems(json.loads(render(doc, "json")), "leaderboard") == []
    md = render(doc, "md")
    assert "train samples/s" in md and f" {typical[0]:g} |" in md
    assert "<th>step ms</th>" in render(doc, "html")  # a main column: not folded into the row's details
    line = next(csv.DictReader(io.StringIO(render(doc, "csv"))))
    assert float(line["train_samples_per_s"]) == typical[0]
    older = render(document(write_tree(tmp_path / "o", training={"jax": JAX_S}, inference={})), "md")
    assert "train samples/s" not in older


def test_the_method_note_says_how_reruns_of_the_rows_modes_repeat(doc):
    """From each row's logged compile mode and levelfield/ground/determinism.py, in the JSON and both pages."""
    note = doc["statistics"]["reruns"]
    assert "bit-identical evaluations for jax compiled, tensorflow compiled;" in note
    assert "not bit-identical for pytorch compiled" in note and "docs/fairness.md" in note
    assert note in render(doc, "md")
    assert html.escape(note) in render(doc, "html")


def test_cost_per_run_from_the_declared_hourly_price(doc, tmp_path):
    assert row(doc, "pytorch")["cost_per_run_usd"] == pytest.approx(3.6 * 11.0 / 3600)  # 0.011 USD
    assert row(doc, "tensorflow")["cost_per_run_usd"] == pytest.approx(3.6 * 22.0 / 3600)
    cheap = document(write_tree(tmp_path / "t", price=None, energy_j=120.0))
    assert row(cheap, "pytorch")["cost_per_run_usd"] is None
    assert row(cheap, "pytorch")["energy_per_run_j"] == 120.0
    text = render(cheap, "md")
    assert "cost per run USD" not in text and "energy per run J" in text


def test_rows_are_sorted_fastest_first(doc):
    assert [r["framework"] for r in doc["training"]] == ["pytorch", "jax", "tensorflow"]


# -- Welch ----------------------------------------------------------------------------------------


def test_welch_comparisons_are_pinned(doc):
    tests = {(t["faster"], t["slower"]): t for t in doc["comparisons"]}
    assert set(tests) == {("pytorch", "jax"), ("pytorch", "tensorflow"), ("jax", "tensorflow")}
    near = tests[("pytorch", "jax")]
    # jax mean 11.24, var 0.688; pytorch mean 11, var 0.625 (n 5 each): se^2 = 0.1376 + 0.125 = 0.2626,
    # t = 0.24 / sqrt(0.2626), df = 0.2626^2 / (0.1376^2 / 4 + 0.125^2 / 4) (Welch-Satterthwaite)
    assert near["t"] == pytest.approx(0.24 / 0.2626**0.5, rel=1e-12) == pytest.approx(0.468342835, rel=1e-9)
    assert near["df"] == pytest.approx(0.2626**2 / ((0.1376**2 + 0.125**2) / 4), rel=1e-12)
    assert near["p_value"] == pytest.approx(0.6520631376, rel=1e-9)
    assert near["within_noise"] is True
    assert near["olympic_difference_s"] == pytest.approx(11.2 - 11.0)
    far = tests[("pytorch", "tensorflow")]  # the 4 successful tensorflow runs against pytorch's 5
    assert far["t"] == pytest.approx(14.266690630, rel=1e-9)
    assert far["p_value"] == pytest.approx(4.416833411e-05, rel=1e-6)
    assert far["within_noise"] is False
    assert far["olympic_difference_s"] == pytest.approx(11.0)


def test_rows_marked_against_the_fastest_on_their_system(doc):
    assert row(doc, "pytorch")["vs_fastest"] == {"fastest": True}
    jax, tf = row(doc, "jax")["vs_fastest"], row(doc, "tensorflow")["vs_fastest"]
    assert (jax["framework"], jax["within_noise"]) == ("pytorch", True)
    assert (tf["framework"], tf["within_noise"]) == ("pytorch", False)
    text = render(doc, "md")
    assert "≈ pytorch, within noise (p=0.652)" in text
    assert "slower than pytorch (p<0.001)" in text


def test_frameworks_on_different_systems_are_not_compared(tmp_path):
    doc = document(
        write_tree(tmp_path / "a", training={"pytorch": PYTORCH_S}, inference={}),
        write_tree(tmp_path / "b", org="globex", training={"jax": JAX_S}, inference={}),
    )
    assert doc["comparisons"] == []
    assert [r["vs_fastest"] for r in doc["training"]] == [None, None]


# -- ids ------------------------------------------------------------------------------------------


def test_row_ids_are_stable_unique_and_tie_training_to_inference(tree, tmp_path):
    first, again = document(tree), document(tree)
    assert render(first, "json") == render(again, "json")
    ids = [r["id"] for r in first["training"] + first["inference"]]
    assert len(set(ids)) == len(ids)
    assert row(first, "pytorch")["id"][4:] == row(first, "pytorch", "inference")["id"][4:]
    # Another tree around the same result keeps the id; another org changes it.
    other = document(write_tree(tmp_path / "other", training={"pytorch": [9.0] * 5}, inference={}))
    assert row(other, "pytorch")["id"] == row(first, "pytorch")["id"]
    moved = document(write_tree(tmp_path / "moved", org="globex", training={"pytorch": [9.0] * 5}, inference={}))
    assert row(moved, "pytorch")["id"] != row(first, "pytorch")["id"]


def test_one_result_in_two_trees_is_refused(tree, tmp_path):
    copy = write_tree(tmp_path / "copy")
    with pytest.raises(UserError, match="both hold closed/acme results of system 'box'"):
        document(tree, copy)


def test_one_tree_given_twice_is_refused(tree):
    with pytest.raises(UserError, match="the same submission folder"):
        collect([tree, tree / "closed" / ".."], check=clean_check)


# -- inference --------------------------------------------------------------------------------------


def test_inference_rows_have_one_metric_per_scenario_with_units(doc):
    pt = row(doc, "pytorch", "inference")
    offline = pt["scenarios"]["offline"]
    assert (offline["metric"], offline["better"]) == ("samples_per_s", "higher")
    assert offline["run_values"] == PYTORCH_OFFLINE and offline["n"] == 3
    single = pt["scenarios"]["singlestream"]
    assert (single["metric"], single["better"]) == ("p90_latency_ms", "lower")
    assert single["run_values"] == pytest.approx(PYTORCH_SINGLESTREAM_MS) and single["mean"] == pytest.approx(0.25)
    assert (pt["accuracy_metric"], pt["accuracy"]) == ("roc_auc", 0.8251)
    assert "singlestream" not in row(doc, "jax", "inference")["scenarios"]
    text = render(doc, "md")
    assert "SingleStream p90 ms mean [95% CI]" in text and "Offline samples/s mean [95% CI]" in text
    assert "accuracy (roc_auc)" in text
    assert "MultiStream" not in text  # no row has it: no empty column


def test_inference_statistics_are_pinned_and_shown_as_mean_and_ci(doc):
    offline = row(doc, "pytorch", "inference")["scenarios"]["offline"]
    assert offline["mean"] == pytest.approx(5000.0) and offline["stdev"] == pytest.approx(100.0)
    # t(0.975, 2) = 4.3026527299; half width = 4.3026527299 * 100 / sqrt(3) = 248.4138
    assert offline["ci95_low"] == pytest.approx(4751.5862, abs=1e-4)
    assert offline["ci95_high"] == pytest.approx(5248.4138, abs=1e-4)
    assert "5000 [4752-5248]" in render(doc, "md")


def test_one_repeat_has_a_mean_but_no_interval(tmp_path):
    doc = document(write_tree(tmp_path / "one", training={}, inference={"jax": {"offline": [7000.0]}}))
    offline = row(doc, "jax", "inference")["scenarios"]["offline"]
    assert (offline["n"], offline["mean"], offline["stdev"], offline["ci95_low"]) == (1, 7000.0, 0.0, None)
    table = tables(doc)[0]
    cells = {c.key: c.text(table.inference[0]) for c in table.inference_columns()}
    assert cells["scenario-offline"] == "7000" and "vs-best-offline" not in cells


@pytest.fixture(scope="module")
def three(tmp_path_factory) -> dict:
    """Offline repeats of three frameworks on one system: jax best, tensorflow within its noise, pytorch beyond."""
    return document(
        write_tree(
            tmp_path_factory.mktemp("lb3") / "acme",
            training={},
            inference={
                "pytorch": {"offline": PYTORCH_OFFLINE, "singlestream": [0.25, 0.26, 0.24]},
                "jax": {"offline": JAX_OFFLINE, "singlestream": [0.40, 0.41, 0.39]},
                "tensorflow": {"offline": TENSORFLOW_OFFLINE},
            },
        )
    )


def test_inference_marks_against_the_best_framework_per_scenario(three):
    offline = {r["framework"]: r["scenarios"]["offline"]["vs_best"] for r in three["inference"]}
    assert offline["jax"] == {"best": True}
    tf, pt = offline["tensorflow"], offline["pytorch"]
    assert (tf["framework"], tf["id"], tf["within_noise"]) == ("jax", row(three, "jax", "inference")["id"], True)
    # Welch: jax sd 100, tensorflow sd 225.46 (n 3 each); t = -33.83 / sqrt(100^2 / 3 + 225.46^2 / 3) = -0.2376
    assert tf["p_value"] == pytest.approx(0.8287398, rel=1e-6)
    assert (pt["framework"], pt["within_noise"]) == ("jax", False)
    # t = 1500.5 / sqrt(2 x 100^2 / 3) = 18.377, df 4
    assert pt["p_value"] == pytest.approx(5.158222e-05, rel=1e-6)
    # For a latency the lowest mean is the best: pytorch's 0.25 ms against jax's 0.40 ms.
    single = {
        r["framework"]: r["scenarios"]["singlestream"]["vs_best"]
        for r in three["inference"]
        if "singlestream" in r["scenarios"]
    }
    assert single["pytorch"] == {"best": True} and single["jax"]["within_noise"] is False


def test_inference_marks_are_shown_in_every_format(three, doc):
    text = render(three, "md")
    assert "Offline vs best on system (Welch)" in text
    assert "≈ jax, within noise (p=0.829)" in text and "slower than jax (p<0.001)" in text
    html = render(three, "html")
    assert html.count('<td class="num noise">') == 1  # tensorflow's Offline figure, within noise of jax
    assert '<span class="mark">≈ jax, within noise (p=0.829)</span>' in html  # its mark, in the same cell
    lines = {line["framework"]: line for line in csv.DictReader(io.StringIO(render(three, "csv")))}
    assert lines["tensorflow"]["offline_samples_per_s_within_noise_of_best"] == "true"
    assert lines["pytorch"]["offline_samples_per_s_within_noise_of_best"] == "false"
    assert lines["jax"]["offline_samples_per_s_vs_best_framework"] == ""
    # A scenario only one framework ran has no peer: no mark column at all.
    assert "SingleStream vs best" not in render(doc, "md")


# -- excluded trees --------------------------------------------------------------------------------


def test_tree_with_findings_is_listed_in_every_format_never_dropped(tree, tmp_path):
    bad = write_tree(tmp_path / "bad", org="globex")
    collected = collect(
        [tree, bad],
        check=lambda p, **o: (
            clean_check(p) if p == tree else checker_saying(finding("TRN010"), finding("INF011"), finding("INF011"))(p)
        ),
    )
    doc = build_document(collected)
    assert doc["excluded"] == [{"path": str(bad), "rules_version": "1.0", "codes": {"INF011": 2, "TRN010": 1}}]
    assert all(r["org"] == "acme" for r in doc["training"] + doc["inference"])
    assert "INF011 x2, TRN010" in render(doc, "md")
    assert "INF011 x2, TRN010" in render(doc, "html")
    assert "INF011:2 TRN010:1" in render(doc, "csv")


def test_warnings_do_not_exclude_and_are_shown(tree):
    doc = document(tree, check=checker_saying(finding("REP003", WARNING)))
    assert doc["excluded"] == [] and len(doc["training"]) == 3
    assert doc["submissions"][0]["warnings"] == {"REP003": 1}
    assert "REP003" in render(doc, "md")


# -- formats ---------------------------------------------------------------------------------------


def test_json_validates_against_the_published_schema(doc, tmp_path):
    from levelfield.ground.validation import load_schema, problems

    load_schema("leaderboard")  # itself a valid draft 2020-12 schema
    data = json.loads(render(doc, "json"))
    assert problems(data, "leaderboard") == []
    excluded = document(write_tree(tmp_path / "x"), check=checker_saying(finding("STR001")))
    assert problems(json.loads(render(excluded, "json")), "leaderboard") == []
    data["training"][0]["surprise"] = 1
    data["inference"][0]["id"] = "row-1"
    found = problems(data, "leaderboard")
    assert any("$.training[0]" in p and "surprise" in p for p in found), found
    assert any("$.inference[0]" in p and "row-1" in p for p in found), found


def test_csv_holds_every_row_unrounded(doc):
    lines = list(csv.DictReader(io.StringIO(render(doc, "csv"))))
    assert [line["table"] for line in lines] == ["training"] * 3 + ["inference"] * 2
    pt = lines[0]
    assert (
        pt["framework"] == "pytorch"
        and float(pt["time_to_target_ci95_low_s"]) == row(doc, "pytorch")["time_to_target_s"]["ci95_low"]
    )
    assert pt["within_noise_of_fastest"] == "" and lines[1]["within_noise_of_fastest"] == "true"
    pt_inference = next(line for line in lines if line["id"] == row(doc, "pytorch", "inference")["id"])
    assert pt_inference["offline_samples_per_s_mean"] == "5000.0"
    assert pt_inference["offline_samples_per_s_runs"] == "5000.0 5100.0 4900.0"
    assert pt_inference["offline_samples_per_s_repeats"] == "3"
    assert (
        float(pt_inference["offline_samples_per_s_ci95_low"])
        == row(doc, "pytorch", "inference")["scenarios"]["offline"]["ci95_low"]
    )
    assert float(pt_inference["singlestream_p90_latency_ms_mean"]) == pytest.approx(0.25)


def test_hostile_names_are_escaped_in_every_format(tmp_path):
    name = "=HYPERLINK(1)|<script>alert(1)</script>"
    doc = document(write_tree(tmp_path / "h", name=name, training={"jax": JAX_S}, inference={}))
    md = render(doc, "md")
    assert "<script>" not in md and "\\|&lt;script>" in md
    html = render(doc, "html")
    assert "<script" not in html and "&lt;script&gt;" in html
    cells = list(csv.DictReader(io.StringIO(render(doc, "csv"))))
    assert cells[0]["system_name"] == "'" + name


def test_html_is_self_contained(doc):
    html = render(doc, "html")
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    for fetch in ("<script", "<link", "src=", "@import", "url(", "http://", "https://"):
        assert fetch not in html, fetch
    assert html.count("<svg") == 3  # time to target; SingleStream and Offline
    for r in doc["training"] + doc["inference"]:
        assert f'<tr id="{r["id"]}">' in html


def test_empty_leaderboard_still_renders(tmp_path):
    doc = document(write_tree(tmp_path / "x"), check=checker_saying(finding("STR001")))
    assert doc["training"] == doc["inference"] == []
    assert "reruns" not in doc["statistics"]  # no training row, no modes to speak of
    for fmt in ("md", "csv", "json", "html"):
        assert render(doc, fmt)
    assert "No clean submission" in render(doc, "md")
