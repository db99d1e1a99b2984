"""Fuzzing the MLCommons Training reader: damaged copies of a published submitter folder must never crash it.

    report = fuzz_training_tree(Path("training_results_v4.0/Dell"), inputs=200, seed=1, ruleset="4.0.0")
    report["crashes"]        # [] when every input was answered with a report

Each input damages one file of a fresh copy of the folder (a result log,
scaling.json or a system description) with one defect class of mutate.py for
its kind, then checks the copy with `check_training_tree`. A damaged
MLCommons tree need not get a finding (a flipped byte in a shell-trace line
is legal noise in these logs, unlike in levelfield's own trees), so what is
required is an answer: a report, never an exception (a UserError included:
the tree was given, so exit 2 is not a verdict on it) and never a hang. The
peer's engines run inside the check; an exception they raise on a damaged
file counts as a crash of levelfield's.
"""

from __future__ import annotations

import random
import shutil
import signal
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

from levelfield.tools.fuzz.mutate import classes_for, file_kind, mutate

EXAMPLES_KEPT = 20
TIME_LIMIT_S = 60  # per input; a check of a 5-log folder takes well under a second here


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang(f"no answer within {TIME_LIMIT_S} s")


READ = ("results", "systems")  # the folders the reader reads; damage elsewhere would test nothing


def _targets(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).parts[0] in READ
    )


def fuzz_training_tree(folder: Path, inputs: int, seed: int, ruleset: str) -> dict:
    """{"inputs", "crashes", "examples", "codes", "wall_s", "passed"} over `inputs` damaged copies."""
    from levelfield.checker.mlcommons.training import check_training_tree

    rng = random.Random(seed)
    targets = _targets(folder)
    codes: Counter = Counter()
    examples, crashes = [], 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="levelfield-fuzz-mlc-") as tmp:
        copy = Path(tmp) / folder.name
        for index in range(inputs):
            if copy.exists():
                shutil.rmtree(copy)
            shutil.copytree(folder, copy)
            rel = rng.choice(targets)
            cls = rng.choice(sorted(classes_for(file_kind(rel))))
            path = copy / rel
            path.chmod(0o644)
            path.write_bytes(mutate(rng, rel, path.read_bytes(), cls))
            previous = signal.signal(signal.SIGALRM, _alarm)
            signal.alarm(TIME_LIMIT_S)
            try:
                report = check_training_tree(copy, ruleset)
            except Exception as error:  # a UserError and a hang too: see the module docstring
                crashes += 1
                if len(examples) < EXAMPLES_KEPT:
                    where = traceback.extract_tb(error.__traceback__)[-1]
                    examples.append(
                        {
                            "input": index,
                            "file": rel,
                            "class": cls,
                            "error": f"{type(error).__name__}: {str(error)[:300]}",
                            "at": f"{Path(where.filename).name}:{where.lineno}",
                        }
                    )
                continue
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, previous)
            codes.update({f.code for f in report.findings})
    return {
        "folder": str(folder),
        "ruleset": ruleset,
        "inputs": inputs,
        "seed": seed,
        "crashes": crashes,
        "examples": examples,
        "codes": dict(sorted(codes.items())),
        "wall_s": round(time.perf_counter() - started, 1),
        "passed": crashes == 0,
    }
