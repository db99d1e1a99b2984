"""One rank of tests/test_multiprocess_step.py: join the framework's process group, take one step, and
(rank 0) save the weights.   python tests/one_step_rank.py SPEC.json   (started by multiprocess_step.py)"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from levelfield.cli.launch.worker import parallel_module, take_cpu_share
from levelfield.harness.world import World

JOIN_TIMEOUT_S = 600  # a collective stuck this long fails the test instead of hanging it


def main(spec_file: str) -> None:
    take_cpu_share(int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"]))
    spec = json.loads(Path(spec_file).read_text())
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    parallel = parallel_module(spec["framework"])
    parallel.join_process_group(rank, size, json.loads(os.environ["LEVELFIELD_ADDRESSES"]), JOIN_TIMEOUT_S)
    try:
        from multiprocess_step import one_step  # beside this file

        weights = one_step(spec["task"], spec["framework"], spec["mode"], World(rank=rank, size=size))
        if rank == 0:
            np.savez(spec["out"], **weights)
    finally:
        parallel.leave_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
