"""`--profile-out DIR`: cProfile evidence for a benchmark, so a missed goal can be explained.

    python -m benchmarks checker --quick --profile-out build/prof
    python -m pstats build/prof/checker.pstats          # then: sort cumulative, stats 40

Each benchmark runs under cProfile in this process; benchmarks that measure in
child processes (benchmarks/child.py) profile those too: `<DIR>/<benchmark>.pstats`
holds this process (where a benchmark with children mostly waits for them),
`<DIR>/<benchmark>-children.pstats` the children's profiles merged (where the
measured work ran: compile, checker). Only
the thread that starts the benchmark is profiled (cProfile's limit): LoadGen's
issue thread and the harness's raw-loop thread are not. The 20 lines with the
largest cumulative time go into the JSON result and from there into the
Markdown summary. Profiling slows Python code down (often 1.5-3x), so a
profiled run's timings are evidence of where time goes, not results.
"""

from __future__ import annotations

import cProfile
import io
import itertools
import pstats
from pathlib import Path

TOP_LINES = 20


class BenchmarkProfile:
    """The profile of one benchmark: this process's profiler and the files its children wrote."""

    def __init__(self, name: str, out_dir: Path):
        self.name, self.out_dir = name, Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.profiler = cProfile.Profile()
        self._children: list[Path] = []
        self._ids = itertools.count()

    def child_path(self) -> Path:
        """Where the next child process writes its .pstats."""
        path = self.out_dir / f"{self.name}-child-{next(self._ids)}.pstats"
        self._children.append(path)
        return path

    def __enter__(self):
        self.profiler.enable()
        return self

    def __exit__(self, *exc):
        self.profiler.disable()
        return False

    def finish(self) -> dict:
        """Write <DIR>/<name>.pstats (this process) and, when children ran, <DIR>/<name>-children.pstats
        (their profiles merged; the per-child files are removed). Returns the paths and top-20 tables."""
        out = {
            "pstats": str(self.out_dir / f"{self.name}.pstats"),
            "top_cumulative": _dump(pstats.Stats(self.profiler), self.out_dir / f"{self.name}.pstats"),
        }
        children = [p for p in self._children if p.exists()]
        out["child_processes"] = len(children)
        if children:
            stats = pstats.Stats(*(str(p) for p in children))
            merged = self.out_dir / f"{self.name}-children.pstats"
            out["children_pstats"] = str(merged)
            out["children_top_cumulative"] = _dump(stats, merged)
            for child in children:
                child.unlink()
        return out


def _dump(stats: pstats.Stats, path: Path) -> str:
    """Write `stats` to `path` (full file names kept) and return its top lines by cumulative time."""
    stats.dump_stats(str(path))
    text = io.StringIO()
    stats.stream = text
    stats.strip_dirs().sort_stats("cumulative").print_stats(TOP_LINES)
    return _table_only(text.getvalue())


def _table_only(report: str) -> str:
    """print_stats' output from its column header on (the preamble names temp files and sort order)."""
    lines = report.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    return "\n".join(line.rstrip() for line in lines[start:] if line.strip())
