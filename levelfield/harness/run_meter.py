"""The cost of a result, metered around each timed window: a training run (run_start to run_stop) and each
inference repeat (one LoadGen run), through levelfield.ground.meter.

    meter = open_meter(sample_interval_ms(suite), "cuda:0", gpus=1)  # started: at run_start, before StartTest
    figures = meter.stop()                                  # at run_stop, or after StartTest returns
    training_figures(figures, system, nodes, window_s)      # [(levelfield_* key, value), ...] for the log
    inference_resources({**figures, "samples": n}, system)  # result.json's runs[i]["resources"]

The price comes from the system description's `hourly_price_usd` (per node) when the run was given one
(`--system`): a training run's price is its timed window's, an inference repeat's is per million samples at
the rate it answered them. No price is recorded without a declared hourly price.

Rules 1.2 fix the meter's sample interval (`measurement.sample_interval_ms`); under a version that does
not (1.0, 1.1) the harness samples every DEFAULT_SAMPLE_INTERVAL_MS, and every run records which.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from levelfield.ground import mllog_keys as LK
from levelfield.ground.meter import ResourceMeter, price_per_million_samples_usd, price_usd

if TYPE_CHECKING:
    from levelfield.rules import Suite

DEFAULT_SAMPLE_INTERVAL_MS = 100  # rules without measurement.sample_interval_ms: 1.0's and 1.1's runs
# Device names of implementations computing on a GPU: "cuda:0" (PyTorch, JAX), "/physical_device:GPU:0" (TF).
GPU_DEVICE = re.compile(r"cuda|gpu", re.IGNORECASE)


def sample_interval_ms(suite: Suite) -> int:
    return int(suite.measurement.get("sample_interval_ms", DEFAULT_SAMPLE_INTERVAL_MS))


def open_meter(interval_ms: int | None, device: object, gpus: int) -> ResourceMeter:
    """A started meter of this run's process tree sampled every `interval_ms` (None: start and stop only),
    with NVML's counters of its first `gpus` GPUs when it computes on a GPU (none on a CPU, where NVML is not
    even asked)."""
    gpu = None
    if GPU_DEVICE.search(str(device)):
        from levelfield.ground.accelerators import open_gpu_meter

        gpu = open_gpu_meter(gpus)
    return ResourceMeter(interval_ms, gpu=gpu).start()


def hourly_price(system: dict | None) -> float | None:
    """The system description's hourly price per node, when it declares one."""
    price = (system or {}).get("hourly_price_usd")
    return float(price) if isinstance(price, (int, float)) and not isinstance(price, bool) else None


def training_figures(figures: dict, system: dict | None, nodes: int, window_s: float) -> list[tuple[str, object]]:
    """The log lines of a training run's resource figures, in order; `window_s` is the run's own clock
    (run_stop's time_ms minus run_start's, in s), which the checker prices again (SYS010). None values are
    left out (no tree memory read, /proc/stat unreadable); energy is a number or "not measured"."""
    price = hourly_price(system)
    pairs = [
        (LK.SAMPLE_INTERVAL_MS, figures["sample_interval_ms"]),
        (LK.PEAK_TREE_RSS_MIB, figures["peak_tree_rss_mib"]),
        (LK.TREE_PROCESSES, figures["tree_processes"]),
        (LK.PROCESS_CPU_S, figures["process_cpu_s"]),
        (LK.PROCESS_CPU_SHARE, figures["process_cpu_share"]),
        (LK.HOST_CPU_SHARE, figures["host_cpu_share"]),
        (LK.OTHERS_CPU_SHARE, figures["others_cpu_share"]),
        (LK.CPU_ENERGY_J, figures["cpu_energy_j"]),
        (LK.ENERGY_J, figures["gpu_energy_j"]),
        (LK.PEAK_DEVICE_MEMORY_USED_MIB, figures["peak_device_memory_used_mib"]),
        (LK.PRICE_USD, None if price is None else price_usd(price, nodes, window_s)),
    ]
    return [(key, value) for key, value in pairs if value is not None]


def inference_resources(figures: dict, system: dict | None) -> dict:
    """result.json's record of one LoadGen run's cost: the meter's figures with the samples the SUT answered
    in the window (`samples`), and (with a declared hourly price) the price of a million samples at that rate."""
    price = hourly_price(system)  # one node's: an inference run runs on one host
    window_s, samples = figures["window_s"], figures["samples"]
    per_million = None if price is None else price_per_million_samples_usd(price, 1, window_s, samples)
    record = dict(figures)
    if per_million is not None:
        record["price_usd_per_million_samples"] = per_million
    return record
