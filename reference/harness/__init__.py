"""The framework-agnostic harness: the time-to-accuracy trainer and the LoadGen runner.

    environment.py     the environment fingerprint every log embeds
    runlog.py          one MLLOG file per run, through mlperf_logging.mllog, written atomically
    trainer.py         `levelfield train`: init, timed epochs, evals, the stop-at-target decision
    distributed.py     `levelfield train --nproc N`: torchrun launch and each process's place (imports
                       torch only when N > 1)
    runner.py          `levelfield infer`: LoadGen scenarios around an implementation's predict
    sut.py             LoadGen's QSL and SUTs (FastSUT by default)
    loadgen_config.py  effective LoadGen settings: rules + seeds + the user's overrides
    loadgen_results.py LoadGen's detail log as result.json fields
    accuracy.py        decode and score mlperf_log_accuracy.json (numpy only; the checker uses it)
    progress.py        progress bars for epochs and LoadGen runs

The harness imports no framework itself; it drives `Implementation` objects
from the registry.
"""
