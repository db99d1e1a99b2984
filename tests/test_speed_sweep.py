"""A result must not depend on the machine having the rules author's speed: the speed sweep.

Framework `none` (reference/null_model.py) stands in for systems from a fast
accelerator to a slow CPU: no cost at all (the harness alone: the limit of a
fast accelerator), a per-sample cost of 10 us to 10 ms, and a large per-call
cost (an accelerator's launch and transfer latency). At each cost,
every scenario runs in the smoke and the demo profile with nothing configured
by hand, and every performance run must be VALID: LoadGen sized from the
system under test (expected latencies, Offline's query, Server's target and
batch cap), never from a number tuned to this machine.

The points run side by side, one process per point and profile (LoadGen is
process-wide, and the model mostly sleeps, as a host waiting for an accelerator
does); sharing the two cores is part of the test: sizing measures the busier
machine.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.serial  # its sweep sizes runs from measured speed: another test beside it changes the speed

SWEEP = Path(__file__).with_name("speed_sweep_point.py")
# (per-call us, per-sample us): nothing, 10 us .. 10 ms per sample, and a 20 ms launch with cheap samples.
COST_POINTS = [(0, 0), (0, 10), (0, 100), (0, 1000), (0, 10000), (20000, 10)]
PROFILES = ("smoke", "demo")
TIMEOUT_S = 1200


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> list[dict]:
    root = tmp_path_factory.mktemp("sweep")
    procs = []
    for (per_call_us, per_sample_us), profile in itertools.product(COST_POINTS, PROFILES):
        out = root / f"call{per_call_us}-sample{per_sample_us}-{profile}"
        procs.append(
            (
                out,
                subprocess.Popen(
                    [
                        sys.executable,
                        str(SWEEP),
                        "--per-call-us",
                        str(per_call_us),
                        "--per-sample-us",
                        str(per_sample_us),
                        "--profile",
                        profile,
                        "--out",
                        str(out),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )
    entries = []
    for out, proc in procs:
        _, stderr = proc.communicate(timeout=TIMEOUT_S)
        assert proc.returncode == 0, stderr[-3000:]
        entries += json.loads((out / "summary.json").read_text())
    return entries


def test_the_sweep_covers_every_cost_profile_and_scenario(sweep):
    seen = {(e["cost"]["per_call_us"], e["cost"]["per_sample_us"], e["profile"], e["scenario"]) for e in sweep}
    assert len(seen) == len(COST_POINTS) * len(PROFILES) * 4 == len(sweep)


def test_every_performance_run_is_valid_at_every_speed(sweep):
    invalid = [(e["cost"], e["profile"], e["scenario"], e["invalid_reasons"]) for e in sweep if not e["valid"]]
    assert not invalid, invalid


def test_sizes_follow_the_speed(sweep):
    """The runner sized from what it measured: a 1000x slower model expects a ~1000x longer latency."""

    def chosen(per_sample_us, scenario, key):
        return next(
            e["chosen"][key]
            for e in sweep
            if e["cost"] == {"per_call_us": 0, "per_sample_us": per_sample_us}
            and e["profile"] == "smoke"
            and e["scenario"] == scenario
        )

    assert (
        200
        < chosen(10000, "singlestream", "expected_latency_ms") / chosen(10, "singlestream", "expected_latency_ms")
        < 1500
    )
    assert chosen(10, "server", "target_qps") > 10 * chosen(10000, "server", "target_qps")


def test_the_loadgen_probes_are_bounded_in_work_at_every_speed(sweep):
    """Batch costs cannot see LoadGen's own work per sample: at no cost they promised 62M samples/s where
    LoadGen moved under 2M, and probes sized from that ran 18 s (Offline) and 54 s (Server)."""
    from levelfield.harness.session import OFFLINE_FIRST_PROBE_MAX_SAMPLES, SERVER_PROBE_MAX_QUERIES

    offline = [e["probe"] for e in sweep if e["scenario"] == "offline"]
    server = [e["probe"] for e in sweep if e["scenario"] == "server"]
    assert len(offline) == len(server) == len(COST_POINTS) * len(PROFILES)
    assert all(p["probes"][0]["samples"] <= OFFLINE_FIRST_PROBE_MAX_SAMPLES and len(p["probes"]) <= 2 for p in offline)
    generated = [t["target_qps"] * t["duration_ms"] / 1000 for p in server for t in p["tries"]]
    assert max(generated) <= SERVER_PROBE_MAX_QUERIES, generated


@pytest.mark.parametrize("target_qps", [1.0, 300.0, 131_072.0, 2.4e7, 6.6e7, 1e9, 1e12])
def test_a_server_probe_never_generates_more_than_its_cap_at_any_target(target_qps):
    """From a slow CPU's few queries per second to targets no LoadGen can offer (a 2x faster host's batch
    costs already promise 68M): the probe is SERVER_PROBE_MS long where that fits, else shorter."""
    from levelfield.harness.session import SERVER_PROBE_MAX_QUERIES, SERVER_PROBE_MS, server_probe_window

    duration_ms, offered = server_probe_window(target_qps)
    assert 1 <= duration_ms <= SERVER_PROBE_MS and offered <= target_qps
    assert offered * duration_ms / 1000 <= SERVER_PROBE_MAX_QUERIES * (1 + 1e-12)
    if target_qps * SERVER_PROBE_MS / 1000 <= SERVER_PROBE_MAX_QUERIES:
        assert (duration_ms, offered) == (SERVER_PROBE_MS, target_qps)  # nothing changes where it fits
