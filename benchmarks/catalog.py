"""The benchmarks, by the name the command line uses, in the order `make bench` runs them.

Modules are imported only when their benchmark runs (or its summary is
rendered), so `python -m benchmarks checker` never imports a framework.
"""

from __future__ import annotations

import importlib
from types import ModuleType

BENCHMARKS = {
    "harness": "benchmarks.harness_efficiency",  # LoadGen runner vs a raw predict loop
    "trainer": "benchmarks.trainer_overhead",  # levelfield train vs a bare training loop
    "compile": "benchmarks.compile_modes",  # compiled vs eager mode
    "checker": "benchmarks.checker_speed",  # levelfield check vs mlperf_logging; large trees
    "noise": "benchmarks.noise",  # CV of repeated Offline runs
    "batch_latency": "benchmarks.batch_latency",  # predict latency per batch size (the Server bounds' basis)
    "mlcommons": "benchmarks.mlcommons_speed",  # levelfield check vs mlperf_logging on published MLCommons trees
    "step": "benchmarks.step_profile",  # steady train step split into parts, predict call; frameworks vs fastest
    "input_pipeline": "benchmarks.input_pipeline",  # steps with each framework's input pipeline vs in-memory batches
    "busy_host": "benchmarks.busy_host",  # predict samples/s alone vs beside busy processes or a copy of itself
}


def module(name: str) -> ModuleType:
    return importlib.import_module(BENCHMARKS[name])
