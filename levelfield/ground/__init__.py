"""The ground floor: the formats and host facts every stage shares, importing no stage.

    errors.py          UserError, exit codes, report_error (one line per problem, never a traceback)
    fsutil.py          atomic writes, bounded reads
    layout.py          the submission tree's folders and file names
    parse.py           strict parsers for what a submission holds (MLLOG lines, JSON, gzip), bounded
    mllog_keys.py      every levelfield_* key the logs and trees carry
    loadgen_names.py   LoadGen's scenario and mode names
    metrics.py         a LoadGen run's metric from its detail log (latency percentiles, samples/s)
    accuracy.py        decode and score mlperf_log_accuracy.json with the task's own metric
    training_log.py    a training log's status, epochs and time to target
    stats.py           time to train (olympic mean, failures), spreads and confidence intervals
    registry.py        task x framework -> implementation, task -> its common/ modules (lazy imports)
    sysinfo.py, accelerators.py, environment.py   the host facts: system description, GPUs, fingerprints
    host_load.py       how busy other processes keep the host as a run starts (train and infer warn)

The stages (rules, the harness under levelfield/harness, the checker, the tools,
the CLI) import these modules and `levelfield.rules`, never each other's
internals; the import contracts in pyproject.toml (`[tool.importlinter]`, run by
the test suite) hold every module here to importing nothing above it. A stage
that needs another stage's internals means something belongs here.
"""
