"""`levelfield infer`: one LoadGen scenario in one mode for one task x framework.

    levelfield infer --task ctr-dlrm --framework jax --scenario offline --mode performance --profile smoke --out runs/x
    levelfield infer --task ctr-dlrm --framework jax --scenario offline --mode performance --system sys.json --out r
    levelfield infer --task fmnist-resnet --framework pytorch --scenario server --mode accuracy \
        --weights runs/fm-pt/weights_0.npz --user-conf user.yaml --out runs/fm-pt-server-acc

SIGINT / SIGTERM: result.json records the run as aborted and the command exits with
128 + the signal's number (130, 143), as `levelfield train` does. LoadGen cannot be
stopped once started, so that exit skips interpreter shutdown (os._exit).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from levelfield.cli.commands import (
    add_command,
    add_compile_mode_option,
    add_data_dir_option,
    add_device_option,
    add_rules_options,
)
from levelfield.ground import host_load


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "infer",
        help="LoadGen scenario runs (performance or accuracy)",
        description="Run one LoadGen scenario (singlestream, multistream, server, offline) in performance or "
        "accuracy mode. --out receives LoadGen's own logs plus settings.json (the exact settings), "
        "result.json (metric with its unit, LoadGen's VALID/INVALID and reasons, fingerprints) and, "
        "in accuracy mode, accuracy.json (the task's metric against the rules' threshold).",
        examples=[
            (
                "levelfield infer --task ctr-dlrm --framework jax --scenario offline --mode performance "
                "--profile smoke --out runs/ctr-jax-offline"
            ),
            (
                "levelfield infer --task ctr-dlrm --framework pytorch --scenario singlestream --mode accuracy "
                "--weights runs/ctr-pt/weights_0.npz --out runs/ctr-pt-ss-acc"
            ),
            (
                "levelfield infer --task ctr-dlrm --framework jax --scenario offline --mode performance "
                "--system systems/box.json --out runs/ctr-jax-priced     (result.json: USD per million samples)"
            ),
            (
                "levelfield infer --task fmnist-resnet --framework tensorflow --scenario server "
                "--mode performance --user-conf user.yaml --out runs/fm-tf-server"
            ),
            (
                "levelfield infer --task fmnist-resnet --framework jax --scenario server --mode performance "
                "--find-peak --out runs/fm-jax-peak     then: --user-conf runs/fm-jax-peak/server-target.yaml"
            ),
            (
                "levelfield infer --task image-resnet50-standard --rules-version 1.2 --framework pytorch "
                "--scenario offline --mode accuracy --precision bf16 --profile smoke --out runs/rn50-bf16-acc"
            ),
            (
                "levelfield infer --task ctr-dlrm --framework none --cost-per-call-us 2000 "
                "--cost-per-sample-us 50 --scenario offline --mode performance --profile smoke --out runs/none"
            ),
        ],
    )
    parser.add_argument("--task", required=True, metavar="T", help="task id (see `levelfield rules show`)")
    parser.add_argument(
        "--framework",
        required=True,
        metavar="F",
        help="pytorch, tensorflow or jax; a plugin's framework id (`levelfield list`, docs/plugins.md); or none: "
        "no framework, a model of the cost given by --cost-per-call-us / --cost-per-sample-us (measures the "
        "harness; never submittable)",
    )
    parser.add_argument("--scenario", required=True, metavar="S", help="singlestream, multistream, server or offline")
    parser.add_argument("--mode", required=True, metavar="M", help="performance or accuracy")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder for the logs and result files")
    parser.add_argument(
        "--profile",
        default="submission",
        metavar="P",
        help="smoke (seconds; never submittable) or submission (default)",
    )
    parser.add_argument(
        "--weights",
        type=Path,
        metavar="FILE",
        help="neutral weights .npz (levelfield train --save-weights); default: the seed-0 initial "
        "weights, recorded as such in result.json",
    )
    parser.add_argument(
        "--user-conf",
        type=Path,
        metavar="FILE",
        help="per-scenario overrides (rules/schemas/user-settings.schema.json), checked before the run",
    )
    parser.add_argument(
        "--precision",
        metavar="P",
        help="fp32 (default) or bf16: the precision the framework computes in, by its own mechanism "
        "(torch.autocast, a Keras dtype policy, Flax module dtypes); the task's rules list what inference may "
        "use (rules 1.2: inference.precisions; the standard tasks allow fp32 and bf16)",
    )
    add_compile_mode_option(parser)
    add_device_option(parser)
    add_data_dir_option(parser)
    parser.add_argument("--force", action="store_true", help="replace results already in --out")
    parser.add_argument(
        "--sut",
        choices=("fast", "plain"),
        default=None,
        help="LoadGen's fast SUT (ids and indices as lists) or its plain one (a QuerySample per "
        "sample); default: the faster one for the scenario (docs/inference.md)",
    )
    parser.add_argument(
        "--find-peak",
        action="store_true",
        help="Server, performance mode: search the largest target_qps whose run LoadGen judges "
        "VALID (each step a run of the profile) and write DIR/server-target.yaml, the "
        "--user-conf of the real run",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        metavar="N",
        help="timed LoadGen runs in performance mode (default: the profile's inference_repeats; "
        "the checker requires the rules' number for a submission)",
    )
    parser.add_argument(
        "--cost-per-call-us",
        type=float,
        default=0.0,
        metavar="US",
        help="framework none: wall time of every predict call, microseconds (default 0)",
    )
    parser.add_argument(
        "--cost-per-sample-us",
        type=float,
        default=0.0,
        metavar="US",
        help="framework none: wall time per sample of a predict call, microseconds (default 0)",
    )
    parser.add_argument(
        "--system",
        type=Path,
        metavar="FILE",
        help="filled-in system description (levelfield sysinfo): its hourly_price_usd prices each repeat per "
        "million samples in result.json",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar (it is shown on a terminal only)")
    add_rules_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from levelfield.ground.errors import UserError
    from levelfield.ground.validation import load_document
    from levelfield.harness.options import InferOptions
    from levelfield.harness.run_state import InferAborted
    from levelfield.harness.runner import infer
    from levelfield.reference.null_model import FRAMEWORK as NULL_FRAMEWORK
    from levelfield.reference.null_model import CostModel

    null_cost = None
    if args.framework == NULL_FRAMEWORK:
        try:
            null_cost = CostModel(args.cost_per_call_us, args.cost_per_sample_us)
        except ValueError as e:
            raise UserError(f"--cost-per-call-us / --cost-per-sample-us: {e}") from None
    elif args.cost_per_call_us or args.cost_per_sample_us:
        raise UserError(
            f"--cost-per-call-us / --cost-per-sample-us: only for --framework {NULL_FRAMEWORK}, not {args.framework}"
        )
    options = InferOptions(
        task_id=args.task,
        framework=args.framework,
        scenario=args.scenario,
        mode=args.mode,
        out=args.out,
        profile=args.profile,
        weights=args.weights,
        user_conf=args.user_conf,
        compile_mode=args.compile_mode,
        device=args.device,
        force=args.force,
        data_dir=args.data_dir,
        rules_dir=args.rules_dir,
        rules_version=args.rules_version,
        sut=args.sut,
        progress=not args.quiet,
        repeats=args.repeats,
        null_cost=null_cost,
        system=None if args.system is None else load_document(args.system),
        precision=args.precision,
    )
    host_load.warn_if_busy()
    try:
        if args.find_peak:
            return _find_peak(options)
        result = infer(options)
    except InferAborted as e:
        return _aborted(e)
    print_summary(result, args.out)
    return 0


def _find_peak(options) -> int:
    from levelfield.harness.find_peak import REPORT_FILE, TARGET_FILE, find_peak

    print(
        f"{options.task_id} / {options.framework}: searching the largest VALID Server target "
        f"(each step a {options.profile}-profile run)"
    )
    document = find_peak(options)
    peak = document["peak"]
    print(
        f"peak: target_qps {peak['target_qps']:.4g}, VALID in {peak['repeats']} run(s) (step {peak['step']}, "
        f"{peak['samples_per_s']:.4g} samples/s, batches of at most {peak['max_batch_size']})"
    )
    print(
        f"written: {options.out / TARGET_FILE} (target_qps {document['written_target_qps']:.4g}, the peak less "
        f"its 5% precision; use it as --user-conf) and {options.out / REPORT_FILE}"
    )
    return 0


def _aborted(error) -> int:
    """Report an aborted or failed run; end the process at once when LoadGen's thread is still running."""
    if error.status == "failed" and error.__cause__ is not None:
        traceback.print_exception(error.__cause__, file=sys.stderr)  # a predict failure: show where
    print(f"levelfield: {error.status}: {error}", file=sys.stderr)
    if error.loadgen_running:
        # LoadGen's C++ threads cannot be stopped or joined; interpreter shutdown beside
        # them could hang or abort, so leave now with the signal's exit code.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(error.exit_code)
    return error.exit_code


def print_summary(result: dict, out: Path) -> None:
    head = (
        f"{result['task']} / {result['framework']} {result['framework_version']} ({result['compile_mode']}, "
        f"{result.get('precision', 'fp32')}) {result['scenario']} {result['mode']}, profile {result['profile']}, "
        f"weights {result['weights']}"
    )
    print(head)
    if result["mode"] == "performance":
        print(f"  {performance_line(result)}: {result['result_validity'] or 'NO RESULT'}")
        for reason in result["invalid_reasons"]:
            print(f"  - {reason}")
        for change in result["sizing"].get("resized", []):
            print(
                f"  sized again after run {change['run']}: {change['key']} {change['from']:.4g} -> "
                f"{change['to']:.4g} ({change['why']})"
            )
    else:
        print(f"  {accuracy_line(result['accuracy'])}")
    chosen = ", ".join(f"{k} {v:.4g}" for k, v in result["sizing"]["chosen"].items())
    print(f"  sized from this system: {chosen or 'all sizes from --user-conf'}")
    print(
        f"  warm-up and sizing {result['warmup_s']:.1f} s (untimed); "
        f"submittable: {'yes' if result['submittable'] else 'no'}"
    )
    print(f"logs, settings.json and result.json in {out}/")


def accuracy_line(acc: dict) -> str:
    """'top1_accuracy 0.9012 over 10000 samples; threshold 0.8910 (0.99 x reference 0.9): PASS', or for a
    fidelity gate (rules 1.2) its agreement, tolerance and threshold at the run's precision."""
    verdict = "PASS" if acc["pass"] else "FAIL"
    if acc.get("gate") == "fidelity":
        return (
            f"{acc['metric']} {acc['value']:.4f} over {acc['items']} items of {acc['samples']} samples "
            f"(fidelity to the float64 reference, not task accuracy); {acc['precision']} tolerance "
            f"{acc['tolerance']:g}, threshold {acc['threshold']:.4f}: {verdict}"
        )
    return (
        f"{acc['metric']} {acc['value']:.4f} over {acc['samples']} samples; threshold {acc['threshold']:.4f} "
        f"({acc['accuracy_ratio']} x reference {acc['reference_value']}): {verdict}"
    )


def performance_line(result: dict) -> str:
    """'samples_per_s 4120 (3 runs: 4011, 4120, 4229; 95% CI 3850-4390)'."""
    name, stats = result["metric"], result["statistics"]
    values = ", ".join(f"{run[name]:.4g}" for run in result["runs"] if run[name] is not None)
    text = f"{name} {result[name]:.4g}" if result[name] is not None else f"{name} none"
    if stats["n"] > 1 and stats["ci95_low"] is not None:
        return f"{text} ({stats['n']} runs: {values}; 95% CI {stats['ci95_low']:.4g}-{stats['ci95_high']:.4g})"
    return text
