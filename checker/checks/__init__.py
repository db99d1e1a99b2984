"""Every registered check, one module per area; importing this package fills the registry.

| area | module | what |
| --- | --- | --- |
| CHK | structure.py | the checker itself (internal errors) |
| STR | structure.py | layout, MANIFEST integrity, path and size safety |
| SYS | system.py | system descriptions and declared versus observed hardware, nodes and processes per node |
| SYS, REP | cost.py | the host's load, price and settings against rules and system; one way of metering per result |
| TRN | training.py | MLLOG training logs against the rules |
| TRN | log_order.py | the order of each MLLOG log's events, timestamps and epoch numbers, one rule per code |
| TRN | log_values.py | each training log's values no rule sets, in the domains the trainer writes |
| TRN | process_shares.py | each process's share of the global batch and the batch-norm span against the rules |
| TRN | throughput.py | each log's throughput figures against the log's own clock; throughput-only logs, no result |
| TRN | throughput_result.py | 1.2: figures from the step windows; throughput results' steps, repeats, batch |
| TRN | run_identity.py | one build, mode, device and size across a result's runs; the metric; a training framework |
| TRN | convergence.py | epochs to target against the rules' reference convergence (Welch for 1.0, RCPs for 1.1) |
| REP | reproducibility.py | seeds, environment and dataset identity across runs |
| RUL | rules_version.py | the rules version a submission was produced under |
| RUL | code_reference.py | code/levelfield.json against the levelfield the runs recorded |
| INF | inference.py | every LoadGen run's logs: verdict, errors, constraints, version |
| INF | settings.py | every LoadGen run's requested and effective settings against the profile, one rule per code |
| INF | settings_file.py | settings.json against the detail logs of its LoadGen runs |
| INF | repeats.py | a performance result as a whole: result.json against its repeats, the repeat count |
| INF | result_file.py | result.json's copied fields against the files they copy (settings, logs, environment) |
| INF | summary_file.py | mlperf_log_summary.txt's figures against the detail log beside it |
| ACC | accuracy.py | LoadGen accuracy runs, re-scored |
| SIG | signature.py | MANIFEST.sig against the MANIFEST and the trusted keys; no private key in a tree |
| PLG | plugins.py | results of a plugin's framework: the division admits them, its code and digest in the tree |
"""

from levelfield.checker.checks import (  # noqa: F401 - imported to register
    accuracy,
    code_reference,
    convergence,
    cost,
    inference,
    log_order,
    log_values,
    plugins,
    process_shares,
    repeats,
    reproducibility,
    result_file,
    rules_version,
    run_identity,
    settings,
    settings_file,
    signature,
    structure,
    summary_file,
    system,
    throughput,
    throughput_result,
    training,
)
