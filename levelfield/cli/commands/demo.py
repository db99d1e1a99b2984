"""`levelfield demo`: the end-to-end demo that README command 1 runs.

    levelfield demo --out demo-out
    levelfield demo --out demo-out --frameworks pytorch jax
    levelfield demo --out demo-out --rules-version 1.2      # four frameworks: onnxruntime serves PyTorch's weights

The whole workflow on this machine, with the rules' `demo` profile (a short
training run on a subset to the profile's own target; LoadGen runs of a few
seconds): verify the data, describe the system, then for each framework train
and run the four LoadGen scenarios in performance and accuracy mode (a
framework that serves inference only, rules 1.2's onnxruntime, runs the
scenarios on the weights the first training framework trained), package
the runs into a submission tree, check it, and build the leaderboard (printed
as Markdown; HTML, JSON and CSV written beside it). The checker and the
leaderboard judge the tree against the demo profile and say on every page
that these are not results.
"""

from __future__ import annotations

import argparse
import json
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING

from levelfield.cli.commands import add_command, add_data_dir_option, add_rules_options

if TYPE_CHECKING:  # imported where used, so `levelfield --help` stays fast
    from levelfield.checker.engine import Report
    from levelfield.cli.demo_stage import StageOptions
    from levelfield.rules.loader import Suite

# Written into the output folder, so a re-run may replace what an earlier demo
# wrote there, and only that: any other non-empty folder is refused.
MARKER = ".levelfield-demo"
DEMO_TASK = "fmnist-resnet"
DEMO_ORG = "demo"
DEMO_SEED = 20261122  # one fixed seed: the demo prints the same accuracies on every CPU run
DEMO_SYSTEM_FIELDS = {"submitter": DEMO_ORG, "division": "closed", "status": "rdi", "system_type": "datacenter"}
LEADERBOARD_FORMATS = ("md", "html", "json", "csv")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        "demo",
        help="run the end-to-end demo: train, infer, package, check, leaderboard",
        description="Run the whole workflow for one task in every framework with the rules' demo profile: verify "
        "the data, write this machine's system description, train to the demo target, run LoadGen's "
        "four scenarios in performance and accuracy mode, package a submission tree, check it and "
        "print the leaderboard (HTML/JSON/CSV written beside it). About 10 minutes on 2 CPU cores. "
        "Everything goes into --out; demo results are labelled as such and are never submittable.",
        examples=[
            "levelfield demo --out demo-out",
            "levelfield demo --out demo-out --frameworks pytorch jax     a subset of the frameworks",
            "levelfield demo --out demo-out --rules-version 1.2      with onnxruntime, serving PyTorch's weights",
            "levelfield demo --out /tmp/lf --data-dir ~/fmnist",
        ],
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        type=Path,
        default=Path("demo-out"),
        help="output folder (default: demo-out); re-running replaces an earlier demo's output",
    )
    parser.add_argument("--task", default=DEMO_TASK, help=f"task to run (default: {DEMO_TASK})")
    parser.add_argument(
        "--frameworks",
        nargs="+",
        metavar="F",
        default=None,
        help="frameworks to run (default: every framework of the rules; one that serves inference only, as "
        "onnxruntime, serves the weights the first training framework trained)",
    )
    add_data_dir_option(parser)
    add_rules_options(parser)
    parser.set_defaults(func=run)


def claim_output_folder(out: Path) -> None:
    """Create `out`, or reuse it if an earlier demo made it; never write into someone else's folder."""
    from levelfield.ground.errors import UserError

    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a folder", hint="choose another --out")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise UserError(
            f"{out}: folder is not empty and was not made by `levelfield demo`; not writing into it",
            hint="choose another --out, or an empty folder",
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by levelfield demo; a re-run may replace this folder's content\n")


class Steps:
    """Numbered step banners and each step's wall time, for the closing table."""

    def __init__(self, total: int):
        self.total, self.number, self.timings_s = total, 0, {}
        self.started = time.perf_counter()

    def begin(self, title: str) -> None:
        self.number += 1
        self.title, self.step_started = title, time.perf_counter()
        print(f"\n== [{self.number}/{self.total}] {title} ==", flush=True)

    def end(self) -> None:
        self.timings_s[self.title] = time.perf_counter() - self.step_started

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started


def run(args: argparse.Namespace) -> int:
    from levelfield.ground.errors import EXIT_FINDINGS, EXIT_OK
    from levelfield.rules import load_suite

    suite = load_suite(args.rules_version, args.rules_dir)
    task = suite.task(args.task)
    frameworks = demo_frameworks(suite, args.frameworks)
    claim_output_folder(args.out)
    steps = Steps(total=5 + len(frameworks))

    steps.begin(f"datasets: SHA-256 of {task.id}'s data against the rules")
    verify_data(args, task.id)
    steps.end()

    steps.begin("system description of this machine")
    system_file, system = describe_system(args.out)
    steps.end()

    trained: dict[str, str] = {}  # training framework -> the weights file its run saved
    for framework in frameworks:
        loadgen = f"{len(suite.scenarios)} LoadGen scenarios x {len(suite.modes)} modes"
        if framework in suite.frameworks:
            steps.begin(f"{framework}: train to the demo target, then {loadgen}")
        else:  # inference only: it serves the weights the first training framework trained
            steps.begin(f"{framework}: {loadgen}, serving the weights {next(iter(trained))} trained")
        trained[framework] = run_framework(args, suite, task.id, framework, system, trained)
        steps.end()

    steps.begin("package the runs into a submission tree")
    tree = package_runs(args.out, system_file)
    steps.end()

    steps.begin(f"check {tree} against the rules' demo profile")
    report = check(tree, args)
    steps.end()

    steps.begin("leaderboard")
    written = leaderboard(tree, report, args.out)
    steps.end()

    print_timings(steps)
    if report.failed:
        # Still a complete demo: the page lists the tree under "Not included" with its codes, as it
        # would any submission. Every run is sized from this machine, so a finding here is a bug.
        print(
            f"\nthe tree has findings ({', '.join(sorted({f.code for f in report.active}))}): the leaderboard "
            f"lists it as not included; `levelfield check {tree} --profile demo` explains each code. The "
            f"demo sizes every run from this machine, so this is a levelfield bug: please report it with "
            f"{args.out}/runs/"
        )
    print("\nleaderboard: " + ", ".join(str(p) for p in written))
    print(
        f"open {written[1]} in a browser for the charts; demo finished in {steps.elapsed_s / 60:.1f} min, "
        f"output in {args.out}/"
    )
    return EXIT_FINDINGS if report.failed else EXIT_OK


def verify_data(args: argparse.Namespace, task_id: str) -> None:
    from levelfield.cli.commands import data

    data.run(
        argparse.Namespace(
            task=task_id, data_dir=args.data_dir, rules_dir=args.rules_dir, rules_version=args.rules_version
        )
    )


def describe_system(out: Path) -> tuple[Path, dict]:
    """This machine's system description, its vendor fields filled in as the demo's."""
    from levelfield.ground.accelerators import query_nvml
    from levelfield.ground.fsutil import atomic_write_text
    from levelfield.ground.sysinfo import collect_system_description, to_json

    report = query_nvml()
    desc = collect_system_description(nvml_report=report)
    desc.update(DEMO_SYSTEM_FIELDS, system_name=f"{socket.gethostname() or 'this machine'} (levelfield demo)")
    system_file = out / "system.json"
    atomic_write_text(system_file, to_json(desc), overwrite=True)
    print(
        f"  {desc['host_processor_core_count']} x {desc['host_processor_model_name']}, "
        f"{desc['host_memory_capacity_gib']} GiB; accelerators: {desc['accelerator_model_name']}"
        + (f" ({report['unavailable_reason']})" if report["unavailable_reason"] else "")
    )
    print(f"  fingerprint {desc['fingerprint']['digest']}; written to {system_file}")
    return system_file, desc


def demo_frameworks(suite: Suite, asked: list[str] | None) -> list[str]:
    """The frameworks the demo runs, training frameworks first: those asked for, else every framework the rules
    name for inference (rules 1.2: the three training frameworks and onnxruntime). A framework that serves
    inference only needs a training framework beside it, whose trained weights it serves."""
    from levelfield.ground.errors import UserError

    frameworks = list(dict.fromkeys(asked or suite.all_frameworks))
    for framework in frameworks:
        suite.check_id("inference_framework", framework)
    training = [f for f in frameworks if f in suite.frameworks]
    if not training:
        raise UserError(
            f"--frameworks {' '.join(frameworks)}: each serves inference only; name a training framework too "
            f"(one of {', '.join(suite.frameworks)}), whose trained weights they serve"
        )
    return training + [f for f in frameworks if f not in training]


def run_framework(
    args: argparse.Namespace, suite: Suite, task_id: str, framework: str, system: dict, trained: dict[str, str]
) -> str:
    """The framework's stage: training in one spawned child, inference in another (demo_stage.py says why); a
    framework that serves inference only runs the second alone, on the weights the first training framework
    of `trained` saved. Returns the weights file served. A failure ends the demo with the child's message."""
    import dataclasses

    from levelfield.cli.demo_stage import StageOptions

    options = StageOptions(
        task_id=task_id,
        framework=framework,
        runs_dir=args.out / "runs",
        system=system,
        org=DEMO_ORG,
        seed=DEMO_SEED,
        data_dir=args.data_dir,
        rules_dir=args.rules_dir,
        rules_version=args.rules_version,
    )
    if framework in suite.frameworks:
        weights = run_child(args.out, "train", options, [])["weights"]
    else:
        weights = next(iter(trained.values()))
    run_child(args.out, "infer", dataclasses.replace(options, weights_file=weights), list(suite.scenarios))
    return weights


def run_child(out: Path, part: str, options: StageOptions, scenarios: list[str]) -> dict:
    """demo_stage.child_main(part, ...) in a spawned process; its report, or a UserError with its message."""
    import multiprocessing

    from levelfield.cli.demo_stage import child_main
    from levelfield.ground.errors import UserError

    report = out / f".stage-{options.framework}-{part}.json"
    report.unlink(missing_ok=True)
    child = multiprocessing.get_context("spawn").Process(
        target=child_main, args=(part, options, scenarios, report), name=f"demo-{options.framework}-{part}"
    )
    child.start()
    try:
        child.join()
    except KeyboardInterrupt:
        child.join()  # the child got the same SIGINT and logs its run as aborted
        raise
    outcome = json.loads(report.read_text()) if report.is_file() else None
    if outcome is None or not outcome["ok"]:
        why = outcome["error"] if outcome else f"the process ended with exit code {child.exitcode}"
        raise UserError(f"demo step {options.framework} ({part}) failed: {why}")
    return outcome


def package_runs(out: Path, system_file: Path) -> Path:
    from levelfield.tools.package import PackageOptions, package

    tree = out / "submission"
    package(
        PackageOptions(runs=[out / "runs"], system=system_file, org=DEMO_ORG, division="closed", out=tree, force=True)
    )
    files = sum(1 for p in tree.rglob("*") if p.is_file())
    print(f"  {tree}/: {files} files, MANIFEST with the SHA-256 of each")
    return tree


def check(tree: Path, args: argparse.Namespace) -> Report:
    from levelfield.checker.engine import check_tree
    from levelfield.checker.report import text_report

    report = check_tree(
        tree, rules_dir=args.rules_dir, rules_version=args.rules_version, data_dir=args.data_dir, profile="demo"
    )
    print(text_report(report))
    return report


def leaderboard(tree: Path, report: Report, out: Path) -> list[Path]:
    """Print the Markdown leaderboard and write every format; the tree is judged by `report`, not checked twice."""
    from levelfield.ground.fsutil import atomic_write_text
    from levelfield.tools.leaderboard import render
    from levelfield.tools.leaderboard.collect import collect
    from levelfield.tools.leaderboard.document import build_document

    doc = build_document(collect([tree], profile=report.profile, check=lambda _path, **_options: report))
    written = []
    for fmt in LEADERBOARD_FORMATS:
        path = out / f"leaderboard.{fmt}"
        text = render(doc, fmt)
        atomic_write_text(path, text, overwrite=True)
        written.append(path)
        if fmt == "md":
            print(text)
    return written


def print_timings(steps: Steps) -> None:
    from tabulate import tabulate

    rows = [[title, f"{seconds:.0f}"] for title, seconds in steps.timings_s.items()]
    rows.append(["total", f"{steps.elapsed_s:.0f}"])
    print(tabulate(rows, headers=["step", "wall s"], tablefmt="github"))
