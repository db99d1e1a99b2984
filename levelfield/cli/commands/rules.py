"""`levelfield rules show|validate`: the suite definition as tables, and a validity check.

levelfield rules show
levelfield rules show --task fmnist-resnet
levelfield rules validate --rules-dir my-rules
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from levelfield.cli.commands import add_command, add_rules_options

if TYPE_CHECKING:  # imported where used, so `levelfield --help` stays fast
    from levelfield.rules.loader import Suite, Task


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "rules",
        help="show or validate the suite's rules",
        description="The rules are the suite as data: tasks, datasets and digests, quality targets, "
        "hyperparameters, run counts, scenario constraints and run-length profiles.",
        examples=[
            "levelfield rules show",
            "levelfield rules show --task ctr-dlrm",
            "levelfield rules validate --rules-dir ./my-rules",
        ],
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = add_command(
        actions,
        "show",
        help="print the task table, or one task in detail",
        description="Print the rules as tables.",
        examples=["levelfield rules show", "levelfield rules show --task seq-transformer"],
    )
    show.add_argument("--task", metavar="T", help="show one task in detail")
    add_rules_options(show)
    show.set_defaults(func=run_show)
    check = add_command(
        actions,
        "validate",
        help="validate a rules folder against the schemas",
        description="Load every rules file of one version (--rules-version) or of every version in "
        "the folder, validate it and cross-check it; print one line per problem and exit 2 when any is found.",
        examples=[
            "levelfield rules validate",
            "levelfield rules validate --rules-version 1.1",
            "levelfield rules validate --rules-dir ./my-rules",
        ],
    )
    add_rules_options(check)
    check.set_defaults(func=run_validate)


def _suite(args: argparse.Namespace) -> Suite:
    from levelfield.rules import load_suite

    return load_suite(args.rules_version, args.rules_dir)


def run_validate(args: argparse.Namespace) -> int:
    from levelfield.ground.errors import UserError
    from levelfield.rules import load_suite
    from levelfield.rules.loader import available_versions, rules_root

    versions = [args.rules_version] if args.rules_version else available_versions(rules_root(args.rules_dir))
    problems = []
    for version in versions or [None]:  # none at all: load_suite says so
        try:
            suite = load_suite(version, args.rules_dir)
        except UserError as error:
            problems.append(str(error))
            continue
        status = "" if suite.status == "final" else f" ({suite.status})"
        print(f"rules {suite.version}{status}: valid ({len(suite.tasks)} tasks: {', '.join(suite.tasks)})")
    if problems:
        raise UserError("\n".join(problems))
    return 0


def run_show(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    suite = _suite(args)
    if args.task:
        print(task_detail(suite.task(args.task)))
        floors = convergence_floors(suite, suite.task(args.task))
        if floors:
            print("\n" + floors)
        return 0
    status = " (provisional targets)" if suite.status == "provisional" else ""
    inference_only = [f for f in suite.inference_frameworks if f not in suite.frameworks]
    also = f"; for inference only: {', '.join(inference_only)}" if inference_only else ""
    print(
        f"levelfield rules {suite.version}{status}; LoadGen {suite.tools['loadgen']['version']}; "
        f"frameworks: {', '.join(suite.frameworks)}{also}"
    )
    print(tabulate(task_rows(suite), headers="keys", tablefmt="github"))
    print()
    print(
        tabulate(
            [
                {
                    "profile": name,
                    "submittable": "yes" if spec["submittable"] else "no",
                    "inference repeats": spec["inference_repeats"],
                }
                for name, spec in suite.profiles.items()
            ],
            headers="keys",
            tablefmt="github",
        )
    )
    return 0


def task_rows(suite: Suite) -> list[dict]:
    rows = []
    for task in suite.tasks.values():
        quality = task.quality
        rows.append(
            {
                "task": task.id,
                "class": task.size_class,  # tiny or standard (docs/scale.md); rules 1.0: all tiny
                "dataset": task.dataset["name"],
                "model (params)": f"{task.model['id']} ({task.model['parameters']:,})",
                "metric": quality["metric"],
                "target": f"{quality['target']}{'*' if quality['provisional'] else ''}",
                "runs (drop)": f"{task.training['runs']} ({task.training['olympic_drop']})",
                "max epochs": task.training["max_epochs"],
                "server bound ms": task.scenarios["server"]["latency_bound_ms"],
            }
        )
    return rows


def _kv_table(title: str, mapping: dict) -> str:
    from tabulate import tabulate

    rows = [(key, json.dumps(value) if isinstance(value, (dict, list)) else value) for key, value in mapping.items()]
    return f"{title}\n{tabulate(rows, tablefmt='plain')}"


def task_detail(task: Task) -> str:
    from tabulate import tabulate

    dataset = {k: v for k, v in task.dataset.items() if k not in ("files", "arrays")}
    family = f"{task.family}, " if task.family else ""
    parts = [f"{task.id}: {task.title} ({family}size class {task.size_class})", _kv_table("dataset", dataset)]
    if "files" in task.dataset:
        parts.append(
            tabulate(
                [
                    (name, f["file"], f["sha256"], "x".join(map(str, f["shape"])), f["dtype"])
                    for name, f in task.dataset["files"].items()
                ],
                headers=["data", "file", "sha256", "shape", "dtype"],
                tablefmt="github",
            )
        )
    else:
        parts.append(
            tabulate(
                [(name, "x".join(map(str, a["shape"])), a["dtype"]) for name, a in task.dataset["arrays"].items()],
                headers=["array", "shape", "dtype"],
                tablefmt="github",
            )
        )
    parts.append(_kv_table("model", task.model))
    parts.append(_kv_table("quality", task.quality))
    parts.append(_kv_table("hyperparameters, fixed (closed division)", task.hyperparameters["fixed"]))
    parts.append(_kv_table("hyperparameters, tunable (closed division)", task.hyperparameters["tunable"]))
    parts.append(_kv_table("training", task.training))
    parts.append(_kv_table("inference", task.inference))
    parts.append(_kv_table("scenarios", task.scenarios))
    for name, profile in task.profiles.items():
        parts.append(_kv_table(f"profile {name}", profile))
    parts.append(_convergence_table(task.reference_convergence))
    return "\n\n".join(parts)


def convergence_floors(suite: Suite, task: Task) -> str | None:
    """Under the RCP method, per calibrated batch size the reference (olympic mean, spread, runs) and the
    lowest olympic mean of epochs to target a result of the rules' run count may show without TRN009:
    what a submitter can look up before choosing a batch size. None for rules without points."""
    from tabulate import tabulate

    from levelfield.ground.rcp import min_acceptable_mean, reference_points

    reference = task.reference_convergence
    if suite.convergence_test != "rcp" or not reference or "points" not in reference:
        return None
    drop, alpha = task.training["olympic_drop"], float(suite.checks["convergence_alpha"])
    kept = task.training["runs"] - 2 * drop
    rows = [
        (
            point.global_batch_size,
            point.n_runs + 2 * drop,
            f"{point.mean_epochs:.3f}",
            f"{point.stdev_epochs:.3f}",
            f"{min_acceptable_mean(point, kept, alpha):.3f}",
        )
        for point in reference_points(reference, drop)
    ]
    headers = ["global batch", "runs", "olympic mean epochs", "sd", f"TRN009 floor (alpha {alpha})"]
    note = "between two calibrated batch sizes the reference is interpolated; outside them TRN021"
    return f"convergence floors\n{tabulate(rows, headers=headers, tablefmt='github')}\n{note}"


def _convergence_table(reference: dict | None) -> str:
    """The task's reference convergence: per calibrated batch size, each framework's epochs to target."""
    if reference is None:
        return "reference convergence\nnot calibrated"
    if "points" not in reference:  # rules 1.0: one batch size, one value per seed
        return _kv_table("reference convergence", reference)
    rows = {
        f"global_batch_size {point['global_batch_size']}": point["epochs_to_target"] for point in reference["points"]
    }
    return _kv_table(f"reference convergence points (epochs to target; {reference['source']})", rows)
