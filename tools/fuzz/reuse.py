"""Reuse what the checker computed for the untouched example files, so 10,000 inputs take minutes, not hours.

    with ReusedParses() as reuse:
        check_tree(ws.root)        # primes: every parse of the example is recorded
        reuse.freeze()             # from now on only byte-identical inputs are answered from memory
        check_tree(ws.root)        # ~40 ms instead of ~0.25 s

One check of the example costs ~0.25 s of CPU (~1.4 s before issue 40), most
of it parsing three 2 MB accuracy logs and twelve LoadGen detail logs, holding
their lines to their schemas and re-scoring the accuracy logs.
A fuzz input changes one file, so the other files' parse results are the
same every time: the parsers are pure functions of the bytes. While the
context is active, the loader's parsers answer from a table keyed by the
exact input bytes recorded while priming; any other input (the damaged file)
is parsed for real. The rules are loaded once, and an accuracy re-score is
reused only for the very object parsed from an untouched log. Nothing else
of `check_tree` changes: the tree is read from disk each time and every
selected check runs. `verify()` re-parses the example at the end and
compares, so a check that modified a shared parse result would be reported,
and a sampled share of inputs runs without this context (see run.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import levelfield.ground.accuracy as accuracy
import levelfield.ground.submission.loader as loader
import levelfield.rules as rules

# The loader's names that parse file content (it imported them from levelfield/ground/parse.py).
_PARSERS = ("parse_json", "parse_accuracy_log", "parse_mllog", "gunzip", "shape_problems")


class ReusedParses:
    def __init__(self):
        self.table: dict[tuple, object] = {}
        self.frozen = False
        self.hits = self.misses = 0
        self._saved: list[tuple[object, str, object, object]] = []  # (module, name, original, replacement)
        self._scores: dict[tuple, tuple] = {}  # (id(entries), task id) -> (entries, score); entries kept alive
        self._suites: dict[tuple, object] = {}
        self._suite_snapshot: dict[tuple, object] = {}

    def __enter__(self) -> ReusedParses:
        if any(getattr(getattr(loader, name), "reuses_parses", False) for name in _PARSERS):
            # Nested, the inner context's "as shipped" share would run the outer context's reuse.
            raise RuntimeError("parse reuse is already active in this process")
        for name in _PARSERS:
            self._patch(loader, name, self._reusing(name, getattr(loader, name)))
        self._patch(rules, "load_suite", self._loading_once(rules.load_suite))
        self._patch(accuracy, "score_entries", self._reusing_score(accuracy.score_entries))
        return self

    def __exit__(self, *exc) -> None:
        for module, name, original, _ in reversed(self._saved):
            setattr(module, name, original)
        self._saved.clear()

    def _patch(self, module, name: str, replacement) -> None:
        self._saved.append((module, name, getattr(module, name), replacement))
        setattr(module, name, replacement)

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """check_tree exactly as shipped, for the sampled share of inputs checked without reuse."""
        for module, name, original, _ in self._saved:
            setattr(module, name, original)
        try:
            yield
        finally:
            for module, name, _, replacement in self._saved:
                setattr(module, name, replacement)

    def freeze(self) -> None:
        self.frozen = True
        # What the rules looked like when priming ended: verify() compares with this, not with the files
        # on disk, which may have been edited during a long run.
        self._suite_snapshot = copy.deepcopy(self._suites)

    def _loading_once(self, load_suite):
        def loaded(*args, **kwargs):
            key = (args, tuple(sorted(kwargs.items())))
            if key not in self._suites:
                self._suites[key] = load_suite(*args, **kwargs)  # an unknown version raises: nothing kept
            return self._suites[key]

        return loaded

    def original(self, name: str) -> Callable[..., Any]:
        return next(orig for module, n, orig, _ in self._saved if n == name)

    def _reusing(self, name: str, parse):
        def reused(*args):
            key = (name, *args)
            if key in self.table:
                self.hits += 1
                return self.table[key]
            result = parse(*args)
            if not self.frozen:
                self.table[key] = result
            else:
                self.misses += 1
            return result

        reused.reuses_parses = True
        return reused

    def _reusing_score(self, score):
        def reused(entries, task, labels, **kwargs):
            shared = any(
                key[0] in ("parse_json", "parse_accuracy_log") and value[0] is entries
                for key, value in self.table.items()
            )
            key = (id(entries), task.id)
            if shared and key in self._scores:
                return self._scores[key][1]
            result = score(entries, task, labels, **kwargs)
            if shared:  # an untouched example log: the same object is scored the same way every time
                self._scores[key] = (entries, result)
            return result

        return reused

    def verify(self) -> list[str]:
        """Keys whose recorded result differs from a fresh parse (empty: no check changed a shared result)."""
        changed = [f"load_suite{key[0]}" for key, suite in self._suite_snapshot.items() if self._suites[key] != suite]
        for key, result in self.table.items():
            name, *args = key
            if self.original(name)(*args) != result:
                changed.append(f"{name}({', '.join(str(a)[:60] for a in args[1:])})")
        return changed
