"""What an offline GPU node needs to run the device check, `levelfield device-check` (levelfield/cli/device_check/).

On a networked machine:
    make wheels                        # build/wheels-py3.12: what a GPU node lacks, as wheels
then on the GPU node (frameworks preinstalled, no package index), from a checkout with that folder:
    bash tools/device_check/node.sh build/wheels-py3.12 OUT_DIR [TIME_LIMIT_S]

    wheels.py    `make wheels`: levelfield's dependencies a GPU node lacks, as wheels for its Python
    node.sh      on the node: install those wheels and this checkout offline, then run `levelfield device-check`

The check itself lives in the CLI layer: it drives the harness (the trainer and the LoadGen runner)
in one process per framework, which a tool may not import (docs/architecture.md, Layers).
"""
