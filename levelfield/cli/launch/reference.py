"""The 1-process reference of `levelfield train --throughput-only --nproc N --scaling`, timed side by side.

    options, stopped_by = time_reference(options, layout)    # before launch(options, layout)
    python -m levelfield.cli.launch.reference PLAN.json      # the reference's one process (started here)

A scaling efficiency compares the N-process runs with the same runs on one
process (levelfield/ground/scaling.py). `time_reference` trains those first:
the same task, framework, recipe, profile, steps and seeds, into
`<out>/scaling_reference/` (its result_<i>.txt and summary.json), then hands
back the options of the N-process runs with their seeds fixed to the
reference's and the reference's figures in `scaling_reference`, which each
N-process run logs with its own efficiency against it.

The reference is one process on one rank's share of the host: the devices
and CPUs rank 0 of the N-process run gets (`worker.take_cpu_share(0, N)`; on a
GPU host rank 0's GPU), so the efficiency compares N such shares with one,
on a CPU as on GPUs. It runs in a process of its own, started by levelfield's
starter like a rank (signals forwarded, a failure reported as one error), so
its framework and memory are gone before the N ranks start, and this process
keeps its whole CPU set for them.
"""

from __future__ import annotations

import json
import signal
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path

from levelfield.cli.launch.checks import check_launch
from levelfield.cli.launch.local_group import run_ranks
from levelfield.cli.launch.rendezvous import local_cluster
from levelfield.ground.errors import EXIT_USER_ERROR, UserError
from levelfield.ground.scaling import REFERENCE_FOLDER, reference_record
from levelfield.harness.options import TrainOptions
from levelfield.harness.trainer import Trainer
from levelfield.harness.world import Layout


def time_reference(options: TrainOptions, layout: Layout) -> tuple[TrainOptions, str | None]:
    """Train the 1-process reference of `options` (throughput-only) into <out>/scaling_reference/; return the
    N-process options (the reference's seeds, its figures as `scaling_reference`) and the name of the signal
    that stopped the reference, or None. UserError before anything runs where the N-process layout cannot run."""
    trainer = Trainer(options)  # the options checked, and the seeds drawn, once for both
    check_launch(trainer, layout)  # refused now, not after the reference's minutes
    seeds = list(trainer.seeds)
    reference_out = Path(options.out).resolve() / REFERENCE_FOLDER
    reference = replace(options, out=reference_out, seeds=seeds, scaling_reference=None)
    one = Layout(nproc=1)
    with tempfile.TemporaryDirectory(prefix="levelfield-reference-") as scratch:
        plan_file = Path(scratch) / "plan.json"
        plan_file.write_text(json.dumps({"options": asdict(reference), "share_of": layout.nproc}, default=str))
        argv = ["-m", "levelfield.cli.launch.reference", str(plan_file)]
        stopped_by = run_ranks(argv, one, local_cluster(one, seeds[0]))
    if stopped_by:
        return options, stopped_by
    summary = json.loads((reference_out / "summary.json").read_text())
    return replace(options, seeds=seeds, scaling_reference=reference_record(summary, REFERENCE_FOLDER)), None


def main(plan_file: str) -> int:
    """The reference's one process: pinned to rank 0's share of the N-process layout, it trains the runs and
    writes their summary.json; a failure goes to the starter as one report (worker.py's)."""
    from levelfield.cli.launch.worker import _ErrorReport, take_cpu_share

    plan = json.loads(Path(plan_file).read_text())
    take_cpu_share(0, plan["share_of"])  # before any framework sizes its thread pools
    options = plan["options"]
    errors = _ErrorReport("")  # levelfield's starter, not torch's agent: the error file
    try:
        from levelfield.harness.trainer import write_summary

        trainer = Trainer(TrainOptions(**{**options, "out": Path(options["out"])}))
        summary = trainer.run()
        write_summary(summary, trainer.o.out, trainer.o.rules_dir)
        return 128 + signal.Signals[trainer.interrupted_by].value if trainer.interrupted_by else 0
    except UserError as error:
        errors.user_error(error)
        return EXIT_USER_ERROR
    except Exception as error:
        errors.crash(error)
        raise


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
