"""`levelfield device-check`: every GPU path of levelfield run once, in minutes, on a machine with no network.

    levelfield device-check --out build/device-check                    # GPU size when NVML finds a GPU
    levelfield device-check --out /tmp/dc --size smoke --time-limit-s 600   # CPU scale (CI)

On a GPU node without a package index: `make wheels` on a networked machine, then
`bash tools/device_check/node.sh build/wheels-py3.12 OUT_DIR` on the node (it installs the wheels and
this checkout beside the node's frameworks and runs this command).

One process per framework runs every step of that framework in-process through the harness (the
trainer's time-to-accuracy and throughput-only runs, the LoadGen runner's Offline and SingleStream runs
of each standard task), so imports, device start-up and datasets are paid once per framework, not once per
step; one pytest process runs the cross-framework equivalence tests, one step per test module. The check
itself imports no framework: it takes the system description, gives each process a share of the time
limit, kills a process at its share's end, and writes `device_check.json` and `device_check.md` into
OUT_DIR after every step, so a check stopped at its time limit (or killed) still says what it finished.
Exit 0 only when every planned step ran and passed. `--size smoke` is the same code at CPU scale (CI runs
it, tests/test_device_check.py), so the check cannot rot between GPU runs.

    plan.py          the steps, their processes, order and estimates, from the rules and the frameworks present
    execute.py       the check's own process: sysinfo, then each child process under its share of the limit
    worker.py        one framework's process: its steps through the trainer and the runner
    pytest_steps.py  the equivalence process's pytest plugin: one step per test module, the deadline
    events.py        the step records and the pipe on which a child reports them
    figures.py       each step's figures, read from the files it wrote
    report.py        device_check.json and device_check.md
    (the command:    levelfield/cli/commands/device_check.py; the node's wheels: tools/device_check/)
"""
