"""The framework-agnostic harness: the time-to-accuracy trainer and the LoadGen runner.

    runlog.py          one MLLOG file per run, through mlperf_logging.mllog, written atomically
    trainer.py         `levelfield train`: init, timed epochs, evals, the stop-at-target decision
    world.py           each process's place in a run of N processes, and where they are (`--nproc N
                       --nnodes M`; levelfield/cli/launch/ starts them)
    throughput.py      a run's samples per second and steady step time, from the timed steps
    calibrate.py       resumable reference runs kept as data; targets and reference convergence points from them
    compliance.py      mlperf_logging's own checker over the trainer's logs
    runner.py          `levelfield infer`: LoadGen scenarios around an implementation's predict
    session.py         one LoadGen test: sizing probes, the SUT, repeats
    sizing.py          what LoadGen needs from the system under test, measured, never assumed
    sut.py             LoadGen's QSL and SUTs (FastSUT; Server's batch planner)
    find_peak.py       `levelfield infer --find-peak`: the highest VALID Server rate
    loadgen_config.py  effective LoadGen settings: rules + seeds + the user's overrides
    loadgen_results.py LoadGen's detail log as result.json fields
    inference_result.py, result_file.py   result.json of a LoadGen run
    progress.py        progress bars for epochs and LoadGen runs
    options.py         InferOptions and TrainOptions: what `infer` and `train` are asked to do
    run_outcome.py     RunOutcome: one training run's record in summary.json
    run_state.py       RunState: how far an inference run got, and InferAborted when it stops short

What the harness shares with the checker and the tools (accuracy scoring,
the host facts, the registry, the file layout) lives on the ground floor,
`levelfield.ground`. The harness imports no framework; it drives
`Implementation` objects from the registry. An import contract
(pyproject.toml, `[tool.importlinter]`) keeps it so.
"""
