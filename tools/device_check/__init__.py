"""The device check: every GPU path of levelfield run once, in minutes, on a machine with no network.

    levelfield-device-check needs no install step of its own: on a networked machine
        make wheels                        # build/wheels-py3.12: what a GPU node lacks, as wheels
    then on the GPU node (frameworks preinstalled, no package index), from a checkout with that folder:
        bash tools/device_check/node.sh build/wheels-py3.12 OUT_DIR [TIME_LIMIT_S]
    or wherever levelfield is installed:
        python -m levelfield.tools.device_check --out OUT_DIR [--size gpu|smoke] [--time-limit-s S]

It drives the real CLI (`levelfield sysinfo`, `train`, `infer`) and the equivalence tests in child
processes, one framework per process, and writes `device_check.json` and `device_check.md` into OUT_DIR
after every step, so a check stopped at its time limit (or killed) still says what it finished. Exit 0
only when every planned step ran and passed. `--size smoke` is the same plan at CPU scale (CI runs it,
tests/test_device_check.py), so the script cannot rot between GPU runs.

    plan.py      the steps, from the rules (standard tasks, precisions) and the frameworks present
    execute.py   runs them under one time limit; each step's figures read from the files it wrote
    report.py    device_check.json and device_check.md
    wheels.py    `make wheels`: levelfield's dependencies a GPU node lacks, as wheels for its Python
    node.sh      on the node: install those wheels and this checkout offline, then run the check
"""
