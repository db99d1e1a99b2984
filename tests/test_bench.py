"""`python -m benchmarks` runs in its tiny configuration and writes the JSON it promises.

Only the shape of the result is checked, never a timing: the numbers belong
to `make bench` on a quiet machine.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO


def test_quick_harness_benchmark_writes_json(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "harness", "--frameworks", "none,jax", "--quick",
                           "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and files[0].name.endswith(".json")
    document = json.loads(files[0].read_text())
    assert document["quick"] is True and document["context"]["cpu_count"] >= 1
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
    assert "Offline" in proc.stdout and "SingleStream" in proc.stdout and "Server" in proc.stdout


def test_unknown_benchmark_is_refused(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "harnes", "--out", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "harnes" in proc.stderr and "harness" in proc.stderr
