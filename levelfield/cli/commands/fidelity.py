"""`levelfield fidelity`: recompute a standard task's pinned reference weights and outputs, compare their digests.

    levelfield fidelity weights --task image-resnet50-standard --rules-version 1.2
    levelfield fidelity reference --task seq-transformer-standard --rules-version 1.2
    levelfield fidelity reference --task ctr-dlrm-standard --rules-version 1.2 --out rules/1.2/fidelity/x.json

Rules 1.2 judge a standard task's accuracy run by fidelity to a reference
computation (levelfield/ground/fidelity.py): weights made by a seeded numpy
generator, reference outputs computed once from them in float64, both pinned
by SHA-256 in the task's rules. These commands are how anyone reproduces them:
`weights` generates the weights afresh and compares their SHA-256 with the
rules'; `reference` recomputes the reference outputs (minutes to an hour: a
float64 pass of the full model over the gate set) and compares the file's
SHA-256, or writes it with --out. Exit 0 when the digests match (or the file
was written), 1 when one differs.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

from levelfield.cli.commands import add_command, add_rules_options
from levelfield.ground.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "fidelity",
        help="recompute a standard task's pinned reference weights and outputs (rules 1.2)",
        description="The fidelity gate's data (rules 1.2, docs/inference.md): `weights` regenerates a task's "
        "reference weights and compares their SHA-256 with the rules; `reference` recomputes the float64 "
        "reference outputs over the gate set and compares (or writes, --out) the file the rules pin.",
        examples=[
            "levelfield fidelity weights --task image-resnet50-standard --rules-version 1.2",
            "levelfield fidelity reference --task ctr-dlrm-standard --rules-version 1.2",
            "nice -n 15 levelfield fidelity reference --task seq-transformer-standard --rules-version 1.2 "
            "--out /tmp/seq.json",
        ],
    )
    parser.set_defaults(func=lambda args: parser.error("choose a subcommand: weights, reference"))
    actions = parser.add_subparsers(dest="fidelity_command", metavar="SUBCOMMAND")
    weights = add_command(
        actions,
        "weights",
        help="generate the reference weights, compare their SHA-256 with the rules",
        description="Run the task's weights generator (inference.fidelity.weights: a seeded draw and a float64 "
        "calibration on training rows) without the cache and compare the SHA-256 of the result with the one "
        "the rules pin. --save keeps them as a neutral .npz (levelfield infer --weights takes it).",
        examples=[
            "levelfield fidelity weights --task image-resnet50-standard --rules-version 1.2",
            "levelfield fidelity weights --task ctr-dlrm-standard --rules-version 1.2 --save /tmp/dlrm.npz",
        ],
    )
    weights.add_argument("--task", required=True, metavar="T", help="a task whose rules have inference.fidelity")
    weights.add_argument("--save", type=Path, metavar="FILE", help="also write the weights to this .npz")
    add_rules_options(weights)
    weights.set_defaults(func=run_weights)
    reference = add_command(
        actions,
        "reference",
        help="recompute the float64 reference outputs, compare (or write) the pinned file",
        description="Load the task's pinned reference weights (generated and checked against the rules' "
        "digest), run the task's float64 numpy network (reference/<task>/common/) over the first "
        "inference.fidelity.samples eval rows and compare the resulting file's SHA-256 with the rules', or "
        "write it to --out (refused over an existing file without --force). Slow: run it under nice.",
        examples=[
            "levelfield fidelity reference --task ctr-dlrm-standard --rules-version 1.2",
            "levelfield fidelity reference --task image-resnet50-standard --rules-version 1.2 --out /tmp/img.json",
        ],
    )
    reference.add_argument("--task", required=True, metavar="T", help="a task whose rules have inference.fidelity")
    reference.add_argument("--out", type=Path, metavar="FILE", help="write the reference file here")
    reference.add_argument("--force", action="store_true", help="replace --out if it exists")
    add_rules_options(reference)
    reference.set_defaults(func=run_reference)


def _task(args: argparse.Namespace):
    from levelfield.rules import load_suite

    task = load_suite(args.rules_version, rules_dir=args.rules_dir).task(args.task)
    if "fidelity" not in task.inference:
        raise UserError(
            f"{task.path}: {task.id} has no fidelity gate (inference.fidelity)",
            hint="rules 1.2's standard tasks have one: --rules-version 1.2",
        )
    return task


def _verdict(what: str, found: str, expected: str) -> int:
    same = found == expected
    print(f"{what}: SHA-256 {found} ({'matches the rules' if same else f'the rules pin {expected}'})")
    return 0 if same else 1


def run_weights(args: argparse.Namespace) -> int:
    from levelfield.ground.registry import task_module
    from levelfield.reference.fidelity_weights import weights_digest
    from levelfield.reference.weights import save_weights

    task = _task(args)
    started = time.perf_counter()
    weights = task_module(task, "fidelity_reference").generate(task)
    found = weights_digest(task, weights)
    took_s = time.perf_counter() - started
    print(f"{task.id}: {sum(v.size for v in weights.values()):,} weights generated in {took_s:.1f} s")
    if args.save is not None:
        save_weights(args.save, weights)
        print(f"written: {args.save}")
    return _verdict(f"{task.id} weights", found, task.inference["fidelity"]["weights"]["sha256"])


def run_reference(args: argparse.Namespace) -> int:
    from levelfield.ground.fidelity import reference_text
    from levelfield.ground.fsutil import atomic_write_text
    from levelfield.ground.registry import task_module
    from levelfield.reference.fidelity_weights import load_fidelity_weights

    task = _task(args)
    fidelity = task.inference["fidelity"]
    if args.out is not None and args.out.exists() and not args.force:
        raise UserError(f"{args.out}: already exists; not overwriting it", hint="pass --force to replace it")
    started = time.perf_counter()
    weights = load_fidelity_weights(task)
    document = task_module(task, "fidelity_reference").reference(task, weights, fidelity["weights"]["sha256"])
    text = reference_text(document)
    print(f"{task.id}: reference over {document['samples']} samples in {time.perf_counter() - started:.0f} s")
    print(f"  spread: {document['spread']}")
    found = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if args.out is not None:
        atomic_write_text(args.out, text, overwrite=True)
        print(f"written: {args.out} (SHA-256 {found})")
        return 0
    return _verdict(f"{task.id} reference", found, fidelity["reference"]["sha256"])
