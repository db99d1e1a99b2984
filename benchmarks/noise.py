"""Run-to-run noise: the coefficient of variation of Offline throughput over repeated runner runs.

    python -m benchmarks noise                            # ctr-dlrm, every framework, 10 runs each
    python -m benchmarks noise --frameworks jax --quick --out /tmp/bench

Per framework: the harness benchmark's setup (benchmarks/harness_efficiency.py
`Bench`: one compiled implementation, init seed 0, the eval set as the QSL),
one untimed Offline run through the runner to warm up, then `repeats` Offline
runs of one `samples`-sample query each with the runner's default SUT. CV =
sample standard deviation / mean of LoadGen's samples/s. A CV above the goal
means differences of that size between frameworks or versions are noise on
this machine; the load average in the result's context says how busy it was.
The same number of raw predict loops over the same number of samples (no
LoadGen; the harness benchmark's raw loop) gives the CV the framework has on
this machine by itself, so what the harness adds to it shows (`raw_cv`).
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from benchmarks.harness_efficiency import FULL as HARNESS_FULL
from benchmarks.harness_efficiency import (
    FULL_OFFLINE_SAMPLES_BY_TASK,
    Bench,
    in_thread,
    offline_conf,
    offline_samples,
)
from benchmarks.options import Options, ratio

TITLE = "noise: coefficient of variation of Offline samples/s over repeated runner runs"


@dataclass(frozen=True)
class Config:
    """FULL: 10 runs of 262,144 samples (~1 s each); QUICK: 5 runs of 4,096 samples."""

    samples: int
    repeats: int
    samples_by_task: dict = field(default_factory=dict)  # tasks whose query differs from `samples`


FULL = Config(samples=262_144, repeats=10, samples_by_task=FULL_OFFLINE_SAMPLES_BY_TASK)
QUICK = Config(samples=4096, repeats=5)


def run(options: Options, config: Config) -> dict:
    results = {}
    samples = offline_samples(config.samples, config.samples_by_task, options.task)
    with tempfile.TemporaryDirectory(prefix="levelfield-bench-noise-") as tmp:
        for framework in options.real_frameworks():
            # The raw loop reads its repeats from a harness Config: one timed pass per call here.
            bench = Bench(options.task, framework, replace(HARNESS_FULL, repeats=1), Path(tmp))
            conf = offline_conf(samples)
            warm, _ = bench.infer("offline", conf)  # warm-up: first predicts of each chunk shape
            batch = int(warm["sizing"]["chosen"]["batch_size"])  # the raw loop uses the runner's chunk
            values = [bench.infer("offline", conf)[0]["samples_per_s"] for _ in range(config.repeats)]
            raw = [in_thread(bench.raw_offline_samples_per_s, samples, batch) for _ in range(config.repeats)]
            mean = statistics.fmean(values)
            entry = {
                "framework_version": bench.impl.version(),
                "samples_per_s": values,
                "mean_samples_per_s": mean,
                "stdev_samples_per_s": statistics.stdev(values),
                "min_samples_per_s": min(values),
                "max_samples_per_s": max(values),
                "raw_samples_per_s": raw,
            }
            entry["cv"] = ratio(entry["stdev_samples_per_s"], mean)
            entry["raw_cv"] = ratio(statistics.stdev(raw), statistics.fmean(raw))
            results[framework] = entry
            options.report(
                f"{framework:10s} Offline {config.repeats} runs of {samples} samples: mean "
                f"{mean:,.0f}/s, stdev {entry['stdev_samples_per_s']:,.0f}/s, CV {100 * entry['cv']:.1f}% "
                f"(min {min(values):,.0f}, max {max(values):,.0f}); raw predict loop CV "
                f"{100 * entry['raw_cv']:.1f}%"
            )
    return {"task": options.task, "samples": samples, "repeats": config.repeats, "frameworks": results}


def rows(result: dict) -> list[dict]:
    return [
        {
            "compared": f"{result['task']} / {framework} {e['framework_version']}: Offline samples/s over "
            f"{result['repeats']} runs of {result['samples']} samples",
            "figures": f"mean {e['mean_samples_per_s']:,.0f}/s, stdev {e['stdev_samples_per_s']:,.0f}/s, "
            f"min {e['min_samples_per_s']:,.0f}, max {e['max_samples_per_s']:,.0f}"
            + (f"; raw predict loop alone: CV {100 * e['raw_cv']:.2f}%" if "raw_cv" in e else ""),
            "ratio": e["cv"],
            "ratio_text": f"CV {100 * e['cv']:.2f}%",
            "goal": "noise_offline_cv",
            "value": e["cv"],
        }
        for framework, e in result["frameworks"].items()
    ]
