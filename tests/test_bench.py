"""`python -m benchmarks` runs in its tiny configuration and writes the JSON and Markdown it promises.

Only the shape of the result is checked, never a timing: the numbers belong
to `make bench` on a quiet machine. One quick run per benchmark, each with the
cheapest framework for it (JAX imports fastest; harness also runs `none`).
So it runs in `make test`'s parallel pass, beside other tests: nothing it asserts depends on the host's load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO


def run_bench(
    tmp_path: Path, *args: str, timeout_s: float = 600, env: dict | None = None
) -> tuple[subprocess.CompletedProcess, dict, str]:
    """Run the benchmarks with --quick into tmp_path (`env` added to this process's); (process, JSON, Markdown)."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", *args, "--quick", "--out", str(tmp_path)],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1, files
    summary = files[0].with_suffix(".md")
    assert summary.exists(), list(tmp_path.iterdir())
    document = json.loads(files[0].read_text())
    assert document["quick"] is True and document["context"]["cpu_count"] >= 1
    assert set(document["goals"]) >= {"trainer_overhead_ratio", "noise_offline_cv"}
    return proc, document, summary.read_text()


def assert_table(markdown: str, name: str, rows: int) -> None:
    """The summary has a section for `name` whose table has `rows` data rows with five cells each."""
    section = markdown.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| ")]
    assert table[0] == "| what is compared | raw figures | ratio | goal | met |"
    assert len(table) - 2 == rows, table
    assert all(line.count(" | ") == 4 for line in table[2:]), table


def test_quick_harness_benchmark_writes_json(tmp_path):
    proc, document, markdown = run_bench(tmp_path, "harness", "--frameworks", "none,jax")
    harness = document["benchmarks"]["harness"]
    assert harness["task"] == "ctr-dlrm"
    assert list(harness["frameworks"]) == ["none", "jax"]  # none: the harness alone
    for entry in harness["frameworks"].values():
        offline, single, server = entry["offline"], entry["singlestream"], entry["server"]
        for kind in ("fast", "plain"):
            assert offline["runner_samples_per_s"][kind] > 0 and offline["ratio"][kind] > 0
            assert single["runner_p90_us"][kind] > 0 and kind in single["added_p90_us"]
        assert offline["raw_samples_per_s"] > 0 and single["raw_p90_us"] > 0
        assert server["steps"] and {"target_qps", "met", "samples_per_s"} <= set(server["steps"][0])
        assert "max_qps" in server and "ratio_to_offline" in server
        if server["limits"]:  # the factors account for the whole ratio
            f = server["limits"]["factors"]
            assert f["batch_size"] * f["load"] * f["busy"] == pytest.approx(server["ratio_to_offline"], rel=1e-9)
            assert server["limits"]["alone_ms"] > 0 and server["limits"]["arrivals_ms"] > 0
    assert "Offline" in proc.stdout and "SingleStream" in proc.stdout and "Server" in proc.stdout
    assert_table(markdown, "harness", rows=7)  # Offline, SingleStream, Server per framework; none's Server floor


def test_quick_trainer_benchmark(tmp_path):
    _, document, markdown = run_bench(tmp_path, "trainer", "--frameworks", "jax")
    trainer = document["benchmarks"]["trainer"]
    assert trainer["task"] == "ctr-dlrm" and trainer["profile"] == "smoke"
    jax = trainer["frameworks"]["jax"]
    assert jax["trainer_run_s"] >= 0 and jax["bare_run_s"] > 0 and jax["ratio"] is not None
    run, bare = jax["trainer_runs"][0], jax["bare_runs"][0]
    # The bare loop did what the trainer did: the same epochs and evals.
    assert bare["epochs"] == run["epochs"] and [e for e, _ in bare["evals"]] == [e for e, _ in run["evals"]]
    assert_table(markdown, "trainer", rows=1)
    assert "trainer / bare loop <= 1.03" in markdown


def test_quick_compile_benchmark(tmp_path):
    _, document, markdown = run_bench(tmp_path, "compile", "--tasks", "ctr-dlrm", "--frameworks", "jax")
    entry = document["benchmarks"]["compile"]["tasks"]["ctr-dlrm"]["jax"]
    for mode in ("compiled", "eager"):
        assert entry[mode]["mode"] == mode
        assert entry[mode]["first_step_s"] > 0 and entry[mode]["step_ms_median"] > 0
        assert len(entry[mode]["step_ms"]) == document["benchmarks"]["compile"]["chunks"]
        assert entry[mode]["peak_rss_mib"] > 0  # measured in its own process
    assert set(entry["ratio"]) == {"first_step", "step"}
    assert_table(markdown, "compile", rows=1)


def test_quick_checker_benchmark(tmp_path):
    _, document, markdown = run_bench(tmp_path, "checker")
    checker = document["benchmarks"]["checker"]
    per_file = checker["per_file"]
    assert per_file["files"] == 15  # the example's training logs
    assert per_file["levelfield"]["findings"] == 0 and per_file["mlperf_logging"]["failed"] == 0
    assert per_file["ratio"] > 0 and per_file["cli"]["mlperf_logging_files"] >= 1
    assert per_file["cli"]["levelfield_exit_code"] == 0 and per_file["cli"]["mlperf_logging_passed"] >= 1
    sizes = checker["trees"]["sizes"]
    assert [s["results"] for s in sizes] == [21 * s["copies"] for s in sizes] and len(sizes) >= 2
    for size in sizes:
        assert size["findings"] == 0, size["finding_codes"]  # the scaled trees are clean
        assert size["peak_rss_mib"] > 0 and size["results_per_s"] > 0
        assert {"read_tree", "load_submission", "checks ACC", "other"} <= set(size["phases_s"])
    assert checker["trees"]["exponent"] is not None
    assert_table(markdown, "checker", rows=2 + len(sizes) + 1)


def test_quick_noise_benchmark_with_profile_and_rerendered_summary(tmp_path):
    profile_dir = tmp_path / "prof"
    _, document, markdown = run_bench(tmp_path, "noise", "--frameworks", "jax", "--profile-out", str(profile_dir))
    noise = document["benchmarks"]["noise"]
    jax = noise["frameworks"]["jax"]
    assert len(jax["samples_per_s"]) == len(jax["raw_samples_per_s"]) == noise["repeats"] >= 5
    assert jax["cv"] >= 0 and jax["raw_cv"] >= 0 and "raw predict loop alone: CV" in markdown
    assert_table(markdown, "noise", rows=1)
    # --profile-out: a .pstats file, and its top lines in the JSON and the summary.
    assert (profile_dir / "noise.pstats").exists()
    assert "cumtime" in document["profiles"]["noise"]["top_cumulative"]
    assert "noise.pstats" in markdown and "cumtime" in markdown
    # The summary can be rendered again from the JSON alone.
    source = next(tmp_path.glob("*.json"))
    again = subprocess.run(
        [sys.executable, "-m", "benchmarks.summary", str(source), "--stdout"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == markdown


def test_quick_mlcommons_benchmark(tmp_path):
    _, document, markdown = run_bench(tmp_path, "mlcommons")
    result = document["benchmarks"]["mlcommons"]
    corpus = REPO.parent / "shared" / "mlperf-corpus" / "training_results_v4.0"
    if not corpus.is_dir():
        assert "skipped" in result
        return
    assert set(result["folders"]) == {p.name for p in corpus.iterdir()}
    for entry in result["folders"].values():
        assert entry["logs"] >= 3 and entry["levelfield_s"] > 0 and entry["mlperf_logging_s"] > 0
        assert entry["speedup"] == entry["mlperf_logging_s"] / entry["levelfield_s"]
    rounds = result["inference_rounds"]
    if rounds is not None:  # the corpus's Inference tree, copied into rounds of growing size
        assert [s["results"] for s in rounds["sizes"]] == [5 * s["copies"] for s in rounds["sizes"]]
        for size in rounds["sizes"]:
            assert size["rows"] == size["scored"] == size["results"] and size["peak_rss_mib"] > 0
        assert rounds["rss_per_1000_results_mib"] is not None
    extra = (result["inference_levelfield_s"] is not None) + (len(rounds["sizes"]) + 1 if rounds else 0)
    assert_table(markdown, "mlcommons", rows=len(result["folders"]) + extra)


def test_unknown_benchmark_is_refused(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "harnes", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "harnes" in proc.stderr and "harness" in proc.stderr


def test_unknown_framework_is_refused_before_anything_runs(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "compile", "--frameworks", "jaxx", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "jaxx" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(tmp_path.iterdir())


def test_quick_batch_latency_benchmark_implies_a_server_bound(tmp_path):
    _, document, markdown = run_bench(tmp_path, "batch_latency", "--tasks", "ctr-dlrm", "--frameworks", "jax")
    result = document["benchmarks"]["batch_latency"]
    costs = result["tasks"]["ctr-dlrm"]["jax"]["costs"]
    assert [c["size"] for c in costs] == [1, 2, 4, 8]  # quick: up to 8 rows
    assert all(c["calls"] >= 3 and 0 < c["median_ms"] <= c["p90_ms"] for c in costs)
    assert_table(markdown, "batch_latency", rows=1)


def test_the_bound_derivation_rounds_up_to_ten_ms_with_a_floor():
    from benchmarks.batch_latency import implied_bound_ms

    def frameworks(*medians):
        return {f"fw{i}": {"costs": [{"size": 128, "median_ms": m}]} for i, m in enumerate(medians)}

    assert implied_bound_ms(frameworks(33.0, 47.2, 41.0), 128) == (47.2, 100)  # 2 x 47.2 = 94.4 -> 100
    assert implied_bound_ms(frameworks(1.2, 2.4), 128) == (2.4, 10)  # the 10 ms floor
    assert implied_bound_ms(frameworks(1.2), 64) == (None, None)  # no figure at that size


def test_quick_step_benchmark_splits_every_step_into_parts(tmp_path):
    # One intra-op thread: on a shared machine PyTorch's default pool (one spinning thread per core) made
    # this quick run minutes long; the test checks the result's shape, and that the threads are recorded.
    _, document, markdown = run_bench(
        tmp_path, "step", "--tasks", "ctr-dlrm", env={"OMP_NUM_THREADS": "1"}, timeout_s=900
    )
    from benchmarks.step_profile import PARTS
    from levelfield.reference.interface import Recipe
    from levelfield.rules import load_suite

    batch_size = Recipe.from_task(load_suite().task("ctr-dlrm")).global_batch_size  # the rules' default
    result = document["benchmarks"]["step"]
    task = result["tasks"]["ctr-dlrm"]
    assert list(task["frameworks"]) == ["pytorch", "tensorflow", "jax"]
    for e in task["frameworks"].values():
        assert e["batch_size"] == batch_size
        assert len(e["step_ms"]["values"]) == e["repeats"] == document["benchmarks"]["step"]["config"]["repeats"]
        assert e["step_ms"]["median"] > 0 and e["forward_ms"]["median"] > 0 and e["predict_ms"]["median"] > 0
        # Within each round the four parts are the step, to float rounding (host is what the other three
        # leave); forward, backward and optimizer were timed apart from the step.
        for i, step_ms in enumerate(e["step_ms"]["values"]):
            assert sum(e[f"{part}_ms"]["values"][i] for part in PARTS) == pytest.approx(step_ms, rel=1e-9)
        # Over rounds, the medians' sum and how far it is from the median step (judged in the summary).
        parts_sum = sum(e[f"{part}_ms"]["median"] for part in PARTS)
        assert e["parts_sum_ms"] == pytest.approx(parts_sum)
        assert e["parts_gap"] == pytest.approx((parts_sum - e["step_ms"]["median"]) / e["step_ms"]["median"])
        assert 0 < result["parts_sum_tolerance"] < 1
        assert e["method"] and e["trace"]["profiler"]
        top = e["trace"]["top_ops"]
        assert 0 < len(top) <= result["top_ops"] and all(op["self_ms"] > 0 and op["calls"] >= 1 for op in top)
        assert [op["self_ms"] for op in top] == sorted((op["self_ms"] for op in top), reverse=True)
    assert task["frameworks"]["pytorch"]["threads"]["intra_op"] == 1
    for kind in ("train", "predict"):
        ratios = task[kind]["ratios"]
        assert ratios[task[kind]["fastest"]] == 1.0 and min(ratios.values()) == 1.0
        assert task[kind]["worst_ratio"] == max(ratios.values())
    assert_table(markdown, "step", rows=3 * 2 + 2)  # train and predict per framework; the task's two verdicts
    assert "train step <= 2x the task's fastest framework" in markdown and "Top ops of" in markdown


def test_trace_self_time_subtracts_nested_events_per_thread():
    from benchmarks.trace_summary import TraceEvent, top_self_time

    events = [
        TraceEvent("a", "execute", 0, 100),  # holds two ops: 100 - 30 - 50 = 20 of its own
        TraceEvent("a", "fusion.1", 10, 30),
        TraceEvent("a", "fusion.2", 50, 50),
        TraceEvent("a", "ThreadpoolListener::Record", 60, 0),  # bookkeeping, skipped
        TraceEvent("b", "fusion.1", 0, 40),  # another thread: nests nothing from thread a
        TraceEvent("b", "end: fusion.1", 40, 5),
        TraceEvent("main", "BlockUntilReady", 0, 200),  # the host waiting for the step: no op
        TraceEvent("c", "wrapper", 0, 10),  # no time of its own: not listed
        TraceEvent("c", "fusion.3", 0, 10),
    ]
    assert top_self_time(events, limit=10) == [
        {"op": "fusion.1", "self_ms": 70 / 1e6, "calls": 2},
        {"op": "fusion.2", "self_ms": 50 / 1e6, "calls": 1},
        {"op": "execute", "self_ms": 20 / 1e6, "calls": 1},
        {"op": "fusion.3", "self_ms": 10 / 1e6, "calls": 1},
    ]
    assert [op["op"] for op in top_self_time(events, limit=1)] == ["fusion.1"]


def test_quick_input_pipeline_benchmark_times_both_paths(tmp_path):
    """The pipeline's share of step time (issue 23): both paths timed in every repeat, the share derived."""
    _, document, markdown = run_bench(tmp_path, "input_pipeline", "--frameworks", "jax")
    result = document["benchmarks"]["input_pipeline"]
    assert result["task"] == "image-resnet50-standard" and result["reduced_size"] is True
    jax = result["frameworks"]["jax"]
    assert len(jax["pipeline_ms"]) == len(jax["in_memory_ms"]) == result["config"]["repeats"]
    assert all(ms > 0 for ms in jax["pipeline_ms"] + jax["in_memory_ms"]) and jax["input_workers"] >= 0
    assert jax["pipeline_share"] == pytest.approx(1 - jax["in_memory_median_ms"] / jax["pipeline_median_ms"])
    assert_table(markdown, "input_pipeline", rows=1)


def test_quick_busy_host_benchmark(tmp_path):
    from benchmarks.busy_host import CONDITIONS, PASSIVE, variants

    _, document, markdown = run_bench(tmp_path, "busy_host", "--frameworks", "jax")
    jax = document["benchmarks"]["busy_host"]["frameworks"]["jax"]
    assert list(jax) == ["default"]  # the passive wait policy is PyTorch's (libgomp) variant only
    for condition in CONDITIONS:
        assert (
            len(jax["default"][condition]["samples_per_s"]) == 2
            and jax["default"][condition]["median_samples_per_s"] > 0
        )
    assert variants("pytorch") == {"default": {}, "omp_passive": PASSIVE}
    assert_table(markdown, "busy_host", rows=2)  # beside busy loops, beside a copy
