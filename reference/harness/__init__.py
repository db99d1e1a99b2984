"""The framework-agnostic harness: the time-to-accuracy trainer and (later) the LoadGen runner.

    environment.py  the environment fingerprint every log embeds
    runlog.py       one MLLOG file per run, through mlperf_logging.mllog, written atomically
    trainer.py      `levelfield train`: init, timed epochs, evals, the stop-at-target decision

The harness imports no framework itself; it drives `Implementation` objects
from the registry.
"""
