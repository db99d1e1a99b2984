"""Run one measuring function in a fresh Python process and get its JSON result back.

    from benchmarks.child import run_in_child
    result = run_in_child("benchmarks.compile_modes:measure", {"task_id": "ctr-dlrm", ...})
    result["peak_rss_mib"]          # the child's own high-water mark, added to every result

A fresh process is what a user's first command sees (no framework, jit or
dataset cache warmed by an earlier measurement) and has a peak RSS of its
own. The parent's `resource.getrusage(RUSAGE_CHILDREN)` would report the
largest child so far rather than this one, so the child reads its own peak
before it exits: VmHWM of /proc/self/status, the high-water mark of its own
memory since it started. Not ru_maxrss: Linux carries the parent's peak into
a child's ru_maxrss across fork and exec (a child of a 150 MiB parent reports
at least 150 MiB however little it uses; found by issue 40's Inference rounds).

With a profile path the child runs its function under cProfile and writes the
.pstats there (the parent merges them: benchmarks/profiling.py).

Command line (the parent builds it): python -m benchmarks.child MODULE:FUNCTION ARGS_JSON OUT_JSON [PSTATS]
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD_TIMEOUT_S = 3600  # the largest checker tree takes minutes on a busy 2-core machine


class ChildFailed(RuntimeError):
    pass


def run_in_child(target: str, kwargs: dict, *, env: dict | None = None, pstats_path: Path | None = None) -> dict:
    """target(**kwargs) in a new interpreter (cwd: the repository); its dict result plus peak_rss_mib."""
    with tempfile.TemporaryDirectory(prefix="levelfield-bench-child-") as scratch:
        out = Path(scratch) / "result.json"
        command = [sys.executable, "-m", "benchmarks.child", target, json.dumps(kwargs), str(out)]
        if pstats_path is not None:
            command.append(str(pstats_path))
        done = subprocess.run(
            command,
            cwd=REPO,
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0 or not out.exists():
            raise ChildFailed(f"{target}({kwargs}) failed with exit code {done.returncode}:\n{done.stderr[-3000:]}")
        return json.loads(out.read_text())


def status_mib(field: str) -> float | None:
    """A memory field of /proc/self/status (KiB there: VmHWM the peak, VmRSS now) in MiB; None without /proc."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, MiB: VmHWM where /proc has it, else ru_maxrss (KiB on
    Linux; which may include the parent's peak, see the module docstring)."""
    peak = status_mib("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str]) -> int:
    target, kwargs, out = argv[0], json.loads(argv[1]), Path(argv[2])
    module_name, _, function_name = target.partition(":")
    function = getattr(importlib.import_module(module_name), function_name)
    if len(argv) > 3:
        import cProfile

        profiler = cProfile.Profile()
        result = profiler.runcall(function, **kwargs)
        profiler.dump_stats(argv[3])
    else:
        result = function(**kwargs)
    result["peak_rss_mib"] = peak_rss_mib()
    out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
