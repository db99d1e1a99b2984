"""One JAX rank of tests/test_jax_parallel.py: the trainer's sequence of calls on 2 processes, then the steps
of the timed run with JAX's compile log on; writes the compilations it saw to OUT.rank<r>.json.
With "fail_rank": r in SPEC, rank r crashes before the warm-up step instead.

    python tests/jax_parallel_rank.py SPEC.json   (started by levelfield's launcher, local_group.run_ranks)
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import jax
import numpy as np

from levelfield.cli.launch.worker import take_cpu_share
from levelfield.harness.world import World
from levelfield.reference.frameworks.jax import parallel as jax_parallel

JOIN_TIMEOUT_S = 600  # a collective stuck this long fails the test instead of hanging it


class Compilations(logging.Handler):
    """Every log line of JAX's compile log (jax.log_compiles) that reports a compilation."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "ompil" in record.getMessage():
            self.seen.append(record.getMessage()[:300])


def main(spec_file: str) -> None:
    take_cpu_share(int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"]))
    spec = json.loads(Path(spec_file).read_text())
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    jax_parallel.join_process_group(rank, size, json.loads(os.environ["LEVELFIELD_ADDRESSES"]), JOIN_TIMEOUT_S)
    try:
        from multiprocess_step import first_batch, recipe  # beside this file

        from levelfield.ground.registry import load_implementation, task_module

        world = World(rank=rank, size=size, broadcast=jax_parallel.broadcast_decision)
        inputs, labels, _ = first_batch(spec["task"])
        r = recipe(spec["task"])
        batch = r.global_batch_size
        order = np.concatenate([np.random.default_rng(7).permutation(len(labels))[None, :batch] for _ in range(4)])
        lrs = np.array([0.01, 0.02, 0.005, 0.01], np.float32) * r.learning_rate / 0.01
        impl = load_implementation(spec["task"], "jax")(r)
        weights = task_module(spec["task"], "model_spec").init_weights(0)
        # The trainer's init: load, set the data, one warm-up step, rank 0 predicts, load again.
        impl.load(weights)
        impl.set_train_data(inputs, labels)
        if spec.get("fail_rank") == rank:  # a crash on one rank while the others enter the step's collective
            raise RuntimeError(f"rank {rank} fails on purpose")
        impl.train_steps(world.share(order[:1]), lrs[:1])
        if world.primary:
            impl.predict(inputs)
        impl.load(weights)
        compilations = Compilations()
        logging.getLogger().addHandler(compilations)
        with jax.log_compiles(True):
            # The timed run: chunks of varying length, rank 0 evaluating while the others wait for its decision.
            for start, stop in ((1, 3), (3, 4), (0, 3)):
                impl.train_steps(world.share(order[start:stop]), lrs[start:stop])
                if world.primary:
                    impl.predict(inputs)
                world.agree(False)
        Path(f"{spec['out']}.rank{rank}.json").write_text(json.dumps(compilations.seen))
    finally:
        jax_parallel.leave_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
