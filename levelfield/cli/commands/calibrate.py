"""`levelfield calibrate`: reference runs per framework, seed and batch size; a target and RCPs from them.

levelfield calibrate --task ctr-dlrm --seeds 5 --batch-sizes 512 1024 2048 --stop-above 0.825
levelfield calibrate --task ctr-dlrm --propose-only
"""

from __future__ import annotations

import argparse

from levelfield.cli.commands import add_command
from levelfield.harness import calibrate  # imports no framework: the trainer is loaded per run


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "calibrate",
        help="reference runs that set a task's target and convergence points (rules data)",
        description="Train the task's reference recipe in every framework, several seeds per global batch "
        "size, until an eval passes --stop-above; each finished run is one line of the rules version's "
        "calibration/<task>.jsonl (resumable: a run already there is never run again). Then propose the "
        "target by the task file's target_rule and the reference convergence points, as YAML to paste "
        "into the task file. None of these runs is a result.",
        examples=[
            "levelfield calibrate --task ctr-dlrm --seeds 5 --batch-sizes 512 1024 2048 --stop-above 0.825",
            "levelfield calibrate --task ctr-dlrm --propose-only                  # from the committed runs",
            "levelfield calibrate --task fmnist-resnet --profile smoke --seeds 1 "
            "--calibration-file /tmp/cal.jsonl  # the tool in seconds",
        ],
    )
    calibrate.add_arguments(parser)
    parser.set_defaults(func=calibrate.execute)
