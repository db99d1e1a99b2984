"""The fuzz loop: generate an input, damage the working copy, check it, classify the outcome, restore.

    from levelfield.tools.fuzz.run import FuzzOptions, run_fuzz
    report = run_fuzz(FuzzOptions(example=Path("submissions/example"), inputs=10_000, seed=1))
    report["crashes"], report["misses"], report["passed"]

`run_sweep` runs every hostile value in every field instead (sweep.py), the same way.

What counts as wrong, per input (each makes the run fail):
- crash: an exception escaping check_tree (a UserError too: exit 2 is not a verdict on a submission),
  a CHK001 internal-error finding, or an input running past the time limit;
- miss: a damaged tree that checks clean, or without the code its class must produce;
- leak: the secret string of the file outside the tree appears in the text or JSON report.
Inputs run with parse reuse (reuse.py); every `full_every`-th input runs without it, and every
`cli_every`-th input (plus the first input of the classes in cases.CLI_FIRST) also runs through
the real CLI in a subprocess, which must exit 1 (0 when the in-process verdict is clean) with no
traceback and no secret in its output.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from levelfield.checker.engine import INTERNAL_ERROR, check_tree
from levelfield.checker.report import json_report, text_report
from levelfield.ground.errors import UserError
from levelfield.tools.fuzz.case import Case
from levelfield.tools.fuzz.cases import ALL_CLASSES, CLI_FIRST, make_case, random_class
from levelfield.tools.fuzz.reuse import ReusedParses
from levelfield.tools.fuzz.sweep import all_sweep_cases
from levelfield.tools.fuzz.workspace import Workspace

EXAMPLES_KEPT = 20  # failing inputs described in the report, per kind of failure


@dataclass
class FuzzOptions:
    example: Path
    inputs: int = 10_000
    seed: int = 1
    full_every: int = 100  # 0: never run without parse reuse
    cli_every: int = 500  # 0: no CLI share at all (not even the first inputs of CLI_FIRST)
    time_limit_s: float = 300.0
    work_dir: Path | None = None
    progress: bool = False


@dataclass
class Outcome:
    case: Case
    codes: frozenset
    failed: bool
    seconds: float
    problem: str | None = None  # crash | hang | could-not-run | internal-error | miss | leak
    detail: str = ""


class _TimeLimit(BaseException):
    """Raised by SIGALRM; a BaseException so no `except Exception` in a check can turn it into a finding."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(signum, frame):
        raise _TimeLimit()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def case_for(index: int, seed: int, ws: Workspace) -> Case:
    """Input `index` of a run with `seed`: the first len(ALL_CLASSES) inputs cover every class once."""
    rng = random.Random(f"{seed}:{index}")
    cls = ALL_CLASSES[index] if index < len(ALL_CLASSES) else random_class(rng)
    return make_case(rng, ws, cls, index)


def check_case(
    ws: Workspace, case: Case, *, time_limit_s: float = 300.0, reuse: ReusedParses | None = None, full: bool = False
) -> Outcome:
    """Apply the case, check the tree in-process, classify, restore the working copy."""
    ws.apply(case.edits)
    try:
        if case.resealed:
            ws.reseal()
        return _judge(ws, case, time_limit_s, reuse.suspended() if (reuse and full) else nullcontext())
    finally:
        ws.restore()


def _judge(ws: Workspace, case: Case, time_limit_s: float, context) -> Outcome:
    start = time.perf_counter()
    try:
        with context, time_limit(time_limit_s):
            report = check_tree(ws.root)
            printed = text_report(report) + json.dumps(json_report(report))  # what the CLI would print
    except _TimeLimit:
        return Outcome(case, frozenset(), False, time.perf_counter() - start, "hang", f"over {time_limit_s:g} s")
    except UserError as error:
        return Outcome(case, frozenset(), False, time.perf_counter() - start, "could-not-run", str(error)[:500])
    except Exception as error:
        tail = "".join(traceback.format_exception(error)[-4:])
        return Outcome(case, frozenset(), False, time.perf_counter() - start, "crash", tail[-1500:])
    seconds = time.perf_counter() - start
    codes = frozenset(f.code for f in report.active)
    outcome = Outcome(case, codes, report.failed, seconds)
    internal = [f.message for f in report.active if f.code == INTERNAL_ERROR]
    if internal:
        outcome.problem, outcome.detail = "internal-error", internal[0][:500]
    elif ws.secret in printed:
        outcome.problem, outcome.detail = "leak", "the secret outside the tree appears in the report"
    elif case.expect == "fail" and not report.failed:
        outcome.problem, outcome.detail = "miss", "the damaged tree checks clean"
    elif case.codes and not case.codes & codes:
        outcome.problem, outcome.detail = "miss", f"expected one of {sorted(case.codes)}, got {sorted(codes)}"
    return outcome


def check_cli(ws: Workspace, case: Case, fmt: str, expected_exit: int) -> str | None:
    """Apply the case and run `levelfield check` in a subprocess; None when it behaved, else what went wrong."""
    ws.apply(case.edits)
    try:
        if case.resealed:
            ws.reseal()
        done = subprocess.run(
            [sys.executable, "-m", "levelfield", "check", str(ws.root), "--format", fmt],
            capture_output=True,
            timeout=900,
        )
    except subprocess.TimeoutExpired:
        return "levelfield check ran for more than 900 s"
    finally:
        ws.restore()
    out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    problems = []
    if done.returncode != expected_exit:
        problems.append(f"exit {done.returncode}, expected {expected_exit}")
    if "Traceback" in err:
        problems.append("a traceback on stderr: " + err[-800:])
    if ws.secret in out + err:
        problems.append("the secret outside the tree appears in the output")
    if fmt == "json":
        try:
            json.loads(out)
        except ValueError:
            problems.append("--format json output is not JSON")
    return "; ".join(problems) or None


class Tally:
    """Counts for the report."""

    def __init__(self):
        self.by_class = defaultdict(
            lambda: {"inputs": 0, "resealed": 0, "failed": 0, "clean": 0, "problems": 0, "codes": Counter()}
        )
        self.codes = Counter()
        self.problems = Counter()
        self.examples = defaultdict(list)
        self.slowest: list[tuple[float, str]] = []
        self.full = Counter()
        self.cli = Counter()
        self.cli_failures: list[str] = []

    def add(self, outcome: Outcome, full: bool) -> None:
        row = self.by_class[outcome.case.cls]
        row["inputs"] += 1
        row["resealed"] += outcome.case.resealed
        row["failed" if outcome.failed else "clean"] += 1
        row["codes"].update(outcome.codes)
        self.codes.update(outcome.codes)
        if full:
            self.full["inputs"] += 1
        if outcome.problem:
            row["problems"] += 1
            self.problems[outcome.problem] += 1
            self.full["problems"] += full
            if len(self.examples[outcome.problem]) < EXAMPLES_KEPT:
                self.examples[outcome.problem].append(f"{outcome.case.describe()}: {outcome.detail}")
        self.slowest = sorted(self.slowest + [(outcome.seconds, outcome.case.describe())], reverse=True)[:5]


@contextmanager
def prepared(example: Path, work_dir: Path | None = None) -> Iterator[tuple[Workspace, ReusedParses]]:
    """(working copy, primed and frozen parse reuse) for checking many damaged copies of `example`."""
    with tempfile.TemporaryDirectory(prefix="levelfield-fuzz-", dir=work_dir) as work:
        ws = Workspace.create(example, Path(work))
        baseline = check_tree(ws.root)  # also loads the dataset labels the accuracy checks need
        # Inputs are judged by the verdict (errors) and the codes they must add: a warning of the base
        # (REP003, an example made from a modified checkout) changes neither.
        if baseline.failed:
            raise UserError(
                f"{example}: the example does not check clean "
                f"({', '.join(sorted({f.code for f in baseline.active}))}); fuzzing needs a base "
                f"without errors"
            )
        with ReusedParses() as reuse:
            check_tree(ws.root)
            reuse.freeze()
            yield ws, reuse


def run_fuzz(options: FuzzOptions) -> dict:
    """`options.inputs` random inputs (the first covers every class once)."""
    return _run(options, lambda ws: (case_for(i, options.seed, ws) for i in range(options.inputs)), "random")


def run_sweep(options: FuzzOptions) -> dict:
    """Every hostile value in every field of the example (sweep.py); options.inputs is ignored."""
    return _run(options, all_sweep_cases, "sweep")


def _run(options: FuzzOptions, cases, mode: str) -> dict:
    started = time.perf_counter()
    tally = Tally()
    with prepared(options.example, options.work_dir) as (ws, reuse):
        for case in cases(ws):
            index = case.index
            full = options.full_every > 0 and index % options.full_every == options.full_every - 1
            outcome = check_case(ws, case, time_limit_s=options.time_limit_s, reuse=reuse, full=full)
            tally.add(outcome, full)
            if _cli_share(options, case, index, mode):
                fmt = ("text", "json")[tally.cli["runs"] % 2]
                problem = check_cli(ws, case, fmt, 1 if outcome.failed else 0)
                tally.cli["runs"] += 1
                if problem:
                    tally.cli["problems"] += 1
                    tally.cli_failures.append(f"{case.describe()} (--format {fmt}): {problem}")
            if options.progress and (index + 1) % 250 == 0:
                _progress(index + 1, tally, started)
        reuse_problems = reuse.verify()
        reuse_counts = {"hits": reuse.hits, "misses": reuse.misses}
        leftovers = ws.differences()
    return _report(options, mode, tally, time.perf_counter() - started, reuse_counts, reuse_problems, leftovers)


def replay(example: Path, seed: int, index: int, work_dir: Path | None = None) -> int:
    """Check input `index` of a run with `seed` as shipped (no reuse) and print what the checker said."""
    with tempfile.TemporaryDirectory(prefix="levelfield-fuzz-", dir=work_dir) as work:
        ws = Workspace.create(example, Path(work))
        case = case_for(index, seed, ws)
        print(case.describe(), f"(expect {case.expect}{', one of ' + str(sorted(case.codes)) if case.codes else ''})")
        ws.apply(case.edits)
        if case.resealed:
            ws.reseal()
        report = check_tree(ws.root)
        print(text_report(report))
    return 0


def _cli_share(options: FuzzOptions, case: Case, index: int, mode: str) -> bool:
    if options.cli_every <= 0:
        return False
    first = mode == "random" and index < len(ALL_CLASSES) and case.cls in CLI_FIRST
    return index % options.cli_every == options.cli_every - 1 or first


def _progress(done: int, tally: Tally, started: float) -> None:
    rate = done / (time.perf_counter() - started)
    print(
        f"fuzz: {done} inputs, {sum(tally.problems.values())} problems, {tally.cli['runs']} CLI runs, "
        f"{rate:.1f} inputs/s",
        file=sys.stderr,
        flush=True,
    )


def _report(
    options: FuzzOptions,
    mode: str,
    tally: Tally,
    wall_s: float,
    reuse_counts: dict,
    reuse_problems: list[str],
    leftovers: list[str],
) -> dict:
    crashes = sum(tally.problems[k] for k in ("crash", "internal-error", "hang", "could-not-run"))
    harness = reuse_problems + [f"working copy differs from the example at {p!r}" for p in leftovers]
    inputs = sum(row["inputs"] for row in tally.by_class.values())
    command = "--sweep" if mode == "sweep" else f"--inputs {options.inputs} --seed {options.seed}"
    return {
        "command": f"python -m levelfield.tools.fuzz {command}",
        "mode": mode,
        "seed": options.seed,
        "inputs": inputs,
        "wall_s": round(wall_s, 1),
        "inputs_per_s": round(inputs / wall_s, 2) if wall_s else None,
        "crashes": crashes,
        "misses": tally.problems["miss"],
        "leaks": tally.problems["leak"],
        "problems": dict(tally.problems),
        "examples": dict(tally.examples),
        "classes": len(tally.by_class),
        "by_class": {
            cls: {**row, "codes": dict(sorted(row["codes"].items()))} for cls, row in sorted(tally.by_class.items())
        },
        "codes_seen": dict(sorted(tally.codes.items())),
        "full_share": {"inputs": tally.full["inputs"], "problems": tally.full["problems"]},
        "cli_share": {"runs": tally.cli["runs"], "problems": tally.cli["problems"], "failures": tally.cli_failures},
        "reuse": {**reuse_counts, "problems": reuse_problems},
        "harness_problems": harness,
        "slowest": [{"seconds": round(s, 2), "input": d} for s, d in tally.slowest],
        "host": {"python": sys.version.split()[0], "cpus": os.cpu_count()},
        "passed": crashes == 0 and not tally.problems and not tally.cli["problems"] and not harness,
    }
