"""Time the phases of one `check_tree` call without changing the checker: wrap the functions it calls.

    with PhaseTimer() as phases:
        check_tree(root)
    phases.totals()   # {"read_tree": 0.4, "load_submission": 11.2, "load_suite": 0.1, "checks ACC": 3.0, ...}

check_tree imports `read_tree`, `load_submission` and `load_suite` from their
modules when it runs and calls `run_check` (one per check code) by module
global, so replacing those module attributes for the duration of the `with`
block sees every call; they are restored on exit. Checks are grouped by code
prefix (STR, SYS, TRN, REP, RUL, INF, ACC; ACC holds the accuracy re-score).
A phase called from inside another (a check that loads the rules) counts
toward the outer one only, so the phases add up to at most the whole call.
If a later checker imports them differently, the wrappers see no call and
`totals()` is empty, which the benchmark reports as no breakdown rather than
as a wrong one. The wrappers cost a few microseconds per call, ~45 calls.
"""

from __future__ import annotations

import importlib
import time
from collections import defaultdict

# (module, attribute, phase name; None: the phase is named after the check code's prefix)
WRAPPED = (
    ("levelfield.ground.submission.tree", "read_tree", "read_tree"),
    ("levelfield.ground.submission.loader", "load_submission", "load_submission"),
    ("levelfield.rules", "load_suite", "load_suite"),
    ("levelfield.checker.engine", "run_check", None),
)


class PhaseTimer:
    def __init__(self):
        self._totals: dict[str, float] = defaultdict(float)
        self._saved: list[tuple[object, str, object]] = []
        self._depth = 0

    def _wrap(self, function, phase: str | None):
        def timed(*args, **kwargs):
            if self._depth:  # called from inside another phase (a check loading the rules): that phase's time
                return function(*args, **kwargs)
            name = phase or f"checks {str(args[0])[:3]}"  # run_check(code, submission, context)
            self._depth += 1
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self._totals[name] += time.perf_counter() - started
                self._depth -= 1

        return timed

    def __enter__(self):
        for module_name, attribute, phase in WRAPPED:
            module = importlib.import_module(module_name)
            original = getattr(module, attribute)
            self._saved.append((module, attribute, original))
            setattr(module, attribute, self._wrap(original, phase))
        return self

    def __exit__(self, *exc):
        for module, attribute, original in reversed(self._saved):
            setattr(module, attribute, original)
        self._saved.clear()
        return False

    def totals(self) -> dict[str, float]:
        return dict(self._totals)
