"""`levelfield train`: time-to-accuracy runs with MLLOG logs and an olympic-mean summary.

levelfield train --task fmnist-resnet --framework pytorch --profile smoke --out runs/fm-pt
levelfield train --task ctr-dlrm --framework jax --runs 5 --seed 100 --out runs/ctr-jax
levelfield train --task ctr-dlrm --framework pytorch --nproc 2 --out runs/ctr-ddp
levelfield train --task ctr-dlrm --framework jax --nnodes 2 --node-rank 0 --rdzv-endpoint 198.18.0.1:29400 --out runs/c
levelfield train --task fmnist-resnet --framework jax --throughput-only --steps 200 --runs 3 --out runs/fm-tput
"""

from __future__ import annotations

import argparse
import json
import os
import signal
from pathlib import Path

from levelfield.cli.commands import (
    add_command,
    add_compile_mode_option,
    add_data_dir_option,
    add_device_option,
    add_rules_options,
)
from levelfield.ground import host_load
from levelfield.ground.cluster_managers import managed_rank
from levelfield.ground.scaling import REFERENCE_FOLDER
from levelfield.harness.world import MAX_NODES, MAX_NPROC  # imports no framework


def _assignment(text: str) -> tuple[str, float | str]:
    """NAME=NUMBER (learning_rate=0.05) or NAME=CHOICE (precision=bf16); the rules judge the value."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=NUMBER or NAME=CHOICE, got {text!r}")
    try:
        return name.strip(), float(value)
    except ValueError:
        return name.strip(), value.strip()


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "train",
        help="time-to-accuracy training runs (MLLOG result files)",
        description="Train one task in one framework until the rules' quality target, N times with distinct "
        "seeds. Each run writes result_<i>.txt (MLLOG); summary.json holds each run's time to "
        "target, the olympic mean (a failed run counting as the slowest, as the leaderboard scores "
        "it) and the successful runs' mean with its 95%% confidence interval. With --throughput-only, "
        "each run trains a fixed number of steps with no evaluation and no target and reports its "
        "samples/s and step time only, never a time to train: under rules 1.2 a training-throughput "
        "result of its own (the rules' warm-up steps, timed steps and repeats; `levelfield package` "
        "files it under throughput/), under 1.0 and 1.1 a figure for --steps N timed steps, never a result.",
        examples=[
            "levelfield train --task fmnist-resnet --framework pytorch --profile smoke --out runs/smoke",
            "levelfield train --task ctr-dlrm --framework jax --runs 5 --seed 100 --out runs/ctr-jax",
            "levelfield train --task seq-transformer --framework tensorflow --eager --out runs/seq-tf-eager",
            "levelfield train --task fmnist-resnet --framework jax --set learning_rate=0.05 --out runs/lr",
            "levelfield train --task fmnist-resnet --framework jax --rules-version 1.1 --set precision=bf16 "
            "--profile smoke --out runs/bf16",
            "levelfield train --task ctr-dlrm --framework pytorch --nproc 2 --profile smoke --out runs/ctr-ddp",
            "levelfield train --task seq-transformer --framework tensorflow --nproc 2 --profile smoke --out runs/s2",
            "# on host 0 and host 1 of a two-host run (node 0 listens at 198.18.0.1:29400):",
            "levelfield train --task ctr-dlrm --framework jax --nnodes 2 --node-rank 0 "
            "--rdzv-endpoint 198.18.0.1:29400 --profile smoke --seed 7 --out runs/ctr-2n",
            "levelfield train --task ctr-dlrm --framework jax --nnodes 2 --node-rank 1 "
            "--rdzv-endpoint 198.18.0.1:29400 --profile smoke --seed 7 --out runs/ctr-2n",
            "# a training-throughput result (rules 1.2: the rules' warm-up, timed steps and 3 repeats)",
            "levelfield train --task image-resnet50-standard --framework jax --rules-version 1.2 --throughput-only "
            "--out runs/rn50-tput",
            "# training throughput alone under rules 1.1 (never a result): 200 timed steps, 3 runs; then 2 processes",
            "levelfield train --task fmnist-resnet --framework jax --throughput-only --steps 200 --runs 3 --out runs/t",
            "levelfield train --task ctr-dlrm --framework pytorch --throughput-only --steps 500 --nproc 2 --out runs/2",
            "# the same on 2 processes and, first, on 1: the scaling efficiency (docs/scale.md)",
            "levelfield train --task image-resnet50-standard --framework jax --throughput-only --steps 20 --nproc 2 "
            "--scaling --out runs/rn50-2",
            "# ranks a workload manager starts, one per task (docs/distributed.md, Slurm and Open MPI):",
            "srun --nodes 2 --ntasks-per-node 2 levelfield train --task ctr-dlrm --framework jax --out runs/ctr-s",
            "mpirun -n 2 levelfield train --task ctr-dlrm --framework tensorflow --profile smoke --out runs/ctr-m",
        ],
    )
    parser.add_argument("--task", required=True, metavar="T", help="task id (see `levelfield rules show`)")
    parser.add_argument(
        "--framework",
        required=True,
        metavar="F",
        help="pytorch, tensorflow or jax (onnxruntime serves inference only); or a plugin's framework id "
        "(`levelfield list`, docs/plugins.md)",
    )
    parser.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="folder for result_<i>.txt and summary.json"
    )
    parser.add_argument(
        "--profile",
        default="submission",
        metavar="P",
        help="smoke (seconds; never submittable) or submission (default)",
    )
    parser.add_argument("--runs", type=int, metavar="N", help="number of runs (default: the rules' count)")
    parser.add_argument("--seed", type=int, metavar="S", help="seed of run 0; run i uses S+i (default: random)")
    add_compile_mode_option(parser)
    add_device_option(parser)
    parser.add_argument(
        "--set",
        dest="overrides",
        type=_assignment,
        action="append",
        default=[],
        metavar="NAME=V",
        help="a tunable hyperparameter (closed division: within the rules' bounds), e.g. learning_rate=0.05; "
        "rules 1.1 fmnist-resnet: precision=bf16 or fp16 (mixed precision) or fp32",
    )
    parser.add_argument("--org", default="levelfield", help="submitting organisation logged as submission_org")
    parser.add_argument("--division", default="closed", help="closed (default) or open")
    parser.add_argument("--system", type=Path, metavar="FILE", help="filled-in system description (levelfield sysinfo)")
    add_data_dir_option(parser)
    parser.add_argument("--save-weights", action="store_true", help="save weights_<i>.npz of each successful run")
    parser.add_argument(
        "--throughput-only",
        action="store_true",
        help="train a fixed number of steps after the usual warm-up: no evaluation, no target; reports "
        "samples/s and step time (docs/training.md, Throughput only): under rules 1.2 a throughput result "
        "with the rules' step counts and repeats, under 1.0 and 1.1 --steps N timed steps, never a result",
    )
    parser.add_argument(
        "--steps",
        type=int,
        metavar="N",
        help="with --throughput-only: the timed steps of each run (required under rules 1.0 and 1.1; under 1.2 "
        "the rules' count by default, and another N is not the rules' result: TRN029)",
    )
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="with --throughput-only --nproc N (N >= 2): first train the same runs on 1 process, on one rank's "
        "share of this host, into OUT/scaling_reference/, then the N-process runs, and record their scaling "
        "efficiency (N-process samples/s / (N x 1-process samples/s)) in their logs and summary.json",
    )
    parser.add_argument("--force", action="store_true", help="replace results already in --out")
    parser.add_argument(
        "--nproc",
        type=int,
        metavar="N",
        help=f"processes on this host for each run, 1 (default) to {MAX_NPROC}, at most one per GPU or CPU: "
        "PyTorch DDP under torchrun, TensorFlow MultiWorkerMirroredStrategy, JAX multi-process "
        "(docs/distributed.md); the global batch is split among all processes. Under srun or mpirun each "
        "task is one rank: leave it out (or give the tasks per node)",
    )
    parser.add_argument(
        "--nnodes",
        type=int,
        metavar="M",
        help=f"hosts of the run, 1 (default) to {MAX_NODES}; start the same command on each with its --node-rank",
    )
    parser.add_argument("--node-rank", type=int, metavar="R", help="this host's number, 0 to M-1 (default 0)")
    parser.add_argument(
        "--rdzv-endpoint",
        metavar="HOST:PORT",
        help="node 0's address and a free port there, the same on every host (with --nnodes 2 or more)",
    )
    add_rules_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from levelfield.ground.errors import UserError
    from levelfield.ground.registry import training_refusal
    from levelfield.harness.options import TrainOptions
    from levelfield.harness.trainer import train, write_summary
    from levelfield.harness.world import Layout

    if refusal := training_refusal(args.framework):  # before anything starts or warns
        raise UserError(refusal)
    if args.runs is not None and args.runs < 1:
        raise UserError(f"--runs: expected a positive number, got {args.runs}")
    _check_throughput_only(args)
    # A rank Slurm or Open MPI started (srun / mpirun levelfield train): the manager says where it is.
    place = managed_rank(os.environ)
    if place is not None:
        from levelfield.cli.launch.managed import check_command

        layout = check_command(
            place, nproc=args.nproc, nnodes=args.nnodes, node_rank=args.node_rank, endpoint=args.rdzv_endpoint,
            device=args.device, framework=args.framework,
        )  # fmt: skip
    else:
        layout = Layout(
            nproc=1 if args.nproc is None else args.nproc,
            nnodes=1 if args.nnodes is None else args.nnodes,
            node_rank=args.node_rank or 0,
            endpoint=args.rdzv_endpoint,
        )
        layout.check()
    if args.device is not None and layout.world_size > 1:
        raise UserError(
            f"--device {args.device} with --nproc {layout.nproc} --nnodes {layout.nnodes}: each rank computes on "
            "its own device (the launcher gives rank r GPU r where there are GPUs)",
            hint="drop --device, or train in one process",
        )
    _check_scaling(args, layout, place)
    existing = sorted(args.out.glob("result_*.txt")) if args.out.is_dir() else []
    if args.scaling:  # the reference's logs too
        existing += sorted((args.out / REFERENCE_FOLDER).glob("result_*.txt"))
    if existing and not args.force:
        raise UserError(
            f"{args.out}: already holds {len(existing)} result file(s); not overwriting them",
            hint="choose another --out, or pass --force to replace them",
        )
    system = None
    if args.system is not None:
        from levelfield.ground.validation import load_document

        system = load_document(args.system)
    options = TrainOptions(
        task_id=args.task,
        framework=args.framework,
        out=args.out,
        profile=args.profile,
        runs=args.runs,
        seed=args.seed,
        mode=args.compile_mode,
        device=args.device,
        org=args.org,
        division=args.division,
        system=system,
        data_dir=args.data_dir,
        rules_dir=args.rules_dir,
        rules_version=args.rules_version,
        force=args.force,
        save_weights=args.save_weights,
        overrides=dict(args.overrides),
        throughput_only=args.throughput_only,
        throughput_steps=args.steps if args.throughput_only else None,
    )
    host_load.warn_if_busy()
    if place is not None:
        from levelfield.cli.launch.managed import done_line, exit_code, run_rank

        if place.rank == 0:
            (args.out / "summary.json").unlink(missing_ok=True)  # replaced below only by this run's rank 0
        summary, interrupted_by, seeds = run_rank(options, place)
        if summary is None:  # rank 0 writes the logs and summary.json
            print(done_line(place, interrupted_by, seeds))
            return exit_code(interrupted_by)
    elif layout.world_size == 1:
        summary = train(options)
        write_summary(summary, args.out, args.rules_dir)  # every log cross-checked by mlperf_logging's own engine
        interrupted_by = summary["interrupted_by"]
    else:
        from levelfield.cli.launch import launch

        summary_file = args.out / "summary.json"
        summary_file.unlink(missing_ok=True)  # replaced below only by this launch's rank 0
        if args.scaling:  # the 1-process reference first, into OUT/scaling_reference/
            from levelfield.cli.launch.reference import time_reference

            options, stopped_by = time_reference(options, layout)
            if stopped_by:
                print(f"interrupted by {stopped_by} during the 1-process reference; its logs in {options.out}/")
                return 128 + getattr(signal, stopped_by).value
        interrupted_by = launch(options, layout)  # rank 0 writes the logs and summary.json
        if layout.node_rank:  # rank 0 lives on node 0: this host has no files of its own
            print(f"node {layout.node_rank} of {layout.nnodes}: done; node 0 holds the logs and summary.json")
            return 128 + getattr(signal, interrupted_by).value if interrupted_by else 0
        if not summary_file.exists():  # stopped before rank 0 could write it
            print(f"interrupted by {interrupted_by} before any run ended; no summary in {args.out}/")
            return 128 + getattr(signal, interrupted_by).value
        summary = json.loads(summary_file.read_text())
        interrupted_by = interrupted_by or summary["interrupted_by"]
    if summary["throughput_only_steps"] is None:
        print_summary(summary, args.out)
    else:
        print_throughput_summary(summary, args.out)
    if interrupted_by:
        return 128 + getattr(signal, interrupted_by).value  # the shell's convention: 130 SIGINT, 143 SIGTERM
    return 0


def _check_throughput_only(args: argparse.Namespace) -> None:
    """--steps needs --throughput-only, and that refuses what only a time-to-accuracy result has. (Whether the
    rules fix the steps or --steps must, the trainer decides: throughput_only.plan.)"""
    from levelfield.ground.errors import UserError

    if args.steps is not None and not args.throughput_only:
        raise UserError(
            f"--steps {args.steps}: only with --throughput-only; a time-to-accuracy run trains until the target",
            hint="add --throughput-only, or leave --steps out",
        )
    if args.throughput_only and args.steps is not None and args.steps < 1:
        raise UserError(f"--steps {args.steps}: expected a positive number of steps")
    if args.throughput_only and args.save_weights:
        raise UserError("--save-weights: a throughput-only run is never a time-to-accuracy result and keeps no weights")


def _check_scaling(args: argparse.Namespace, layout, place) -> None:
    """--scaling times N processes against 1 on this host: throughput-only, N >= 2, one host, levelfield's starter."""
    from levelfield.ground.errors import UserError

    if not args.scaling:
        return
    if not args.throughput_only:
        raise UserError(
            "--scaling: only with --throughput-only; it compares training throughput, which a time-to-accuracy "
            "run does not measure alone",
            hint="add --throughput-only --steps N",
        )
    if place is not None:
        raise UserError(
            "--scaling: under Slurm or Open MPI the manager starts the ranks, and levelfield cannot start the "
            "1-process reference beside them",
            hint="train the 1-process runs as a job step of their own, with the same --seed",
        )
    if layout.nnodes > 1 or layout.world_size < 2:
        raise UserError(
            f"--scaling with --nproc {layout.nproc} --nnodes {layout.nnodes}: expected --nproc 2 or more on one "
            "host (--nnodes 1), the processes its 1-process reference is compared with",
            hint="for example --nproc 2 --scaling",
        )


def print_throughput_summary(summary: dict, out: Path) -> None:
    """Throughput-only runs: each run's samples/s and step time, then their median and range."""
    from tabulate import tabulate

    def shown(value, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    rows = [
        [
            r["index"],
            r["seed"],
            r["reason"],
            shown(r["train_samples_per_s"], 1),
            shown(r["step_time_ms"], 2),
            f"{r['time_to_first_step_s']:.1f}",
            f"{r['peak_rss_mib']:.0f}",
        ]
        for r in summary["runs"]
    ]
    headers = ["run", "seed", "reason", "train samples/s", "step ms", "first step s", "peak RSS MiB"]
    print(tabulate(rows, headers=headers, tablefmt="github"))
    steps, tput, warmup = summary["throughput_only_steps"], summary["throughput"], summary["throughput_warmup_steps"]
    for name, unit, digits in (("train_samples_per_s", "samples/s", 1), ("step_time_ms", "ms", 2)):
        f = tput[name]
        if f["n"]:
            print(
                f"{name}: median {f['median']:.{digits}f} {unit} over {f['n']} run(s) "
                f"(min {f['min']:.{digits}f}, max {f['max']:.{digits}f})"
            )
    if summary.get("scaling"):
        print(scaling_line(summary["scaling"]))
    if warmup is None:
        print(
            f"throughput only: {steps} timed steps per run after the warm-up, no evaluation, no target; "
            f"not a time-to-accuracy result (`levelfield package` refuses these logs)"
        )
    else:
        print(
            f"training-throughput result (rules {summary['rules_version']}): {warmup} warm-up and {steps} timed "
            f"steps per run, {len(summary['runs'])} repeat(s), no evaluation, no target; not a time to train "
            f"(`levelfield package` files these logs under throughput/)"
        )
    if summary["interrupted_by"]:
        print(f"interrupted by {summary['interrupted_by']}: the interrupted run is logged as aborted")
    print(f"logs and summary.json in {out}/")


def print_summary(summary: dict, out: Path) -> None:
    from tabulate import tabulate

    from levelfield.ground.stats import shown_time_to_train

    rows = [
        [
            r["index"],
            r["seed"],
            r["status"],
            r["reason"],
            f"{r['evals'][-1][0]:g}" if r["evals"] else "-",  # rules 1.1: a fraction (evals every N samples)
            "yes" if r["peer_compliance"] else "NO",
            f"{r['evals'][-1][1]:.4f}" if r["evals"] else "-",
            f"{r['time_to_train_s']:.1f}" if r["time_to_train_s"] is not None else "-",
            f"{r['time_to_first_step_s']:.1f}",
            f"{r['peak_rss_mib']:.0f}",
        ]
        for r in summary["runs"]
    ]
    print(
        tabulate(
            rows,
            headers=[
                "run",
                "seed",
                "status",
                "reason",
                "epochs at last eval",
                "mlperf_logging ok",
                summary["quality_metric"],
                "time to target s",
                "first step s",
                "peak RSS MiB",
            ],
            tablefmt="github",
        )
    )
    ttt = summary["time_to_train_s"]
    shown_s, kind = shown_time_to_train(ttt) if ttt else (None, None)
    if kind == "olympic mean":
        runs = len(summary["runs"])
        failed = f", {runs - ttt['n']} failed counted as the slowest" if runs > ttt["n"] else ""
        ci = (
            f"; successful runs' mean {ttt['mean']:.1f} s, 95% CI [{ttt['ci95_low']:.1f}, {ttt['ci95_high']:.1f}]"
            if ttt["ci95_low"] is not None
            else ""
        )
        print(
            f"olympic mean time to target: {shown_s:.1f} s over {runs} runs (drop {ttt['olympic_drop']} "
            f"from each end{failed}){ci}"
        )
    elif kind == "single run":
        print(f"time to target of the single run (not an olympic mean): {shown_s:.1f} s")
    if summary["interrupted_by"]:
        print(f"interrupted by {summary['interrupted_by']}: the interrupted run is logged as aborted")
    print(f"logs and summary.json in {out}/")


def scaling_line(scaling: dict) -> str:
    """summary.json's `scaling` in one line: the efficiency, both medians, where the reference's logs are."""
    ref = scaling["reference"]

    def rate(value) -> str:
        return "-" if value is None else f"{value:.1f} samples/s"

    efficiency = "-" if scaling["efficiency"] is None else f"{scaling['efficiency']:.3f}"
    n = scaling["world_size"]
    return (
        f"scaling efficiency: {efficiency} = {n} processes' median {rate(scaling['train_samples_per_s'])} / "
        f"({n} x 1 process's median {rate(ref['train_samples_per_s'])}, {ref['runs']} run(s) in {ref['folder']}/)"
    )
