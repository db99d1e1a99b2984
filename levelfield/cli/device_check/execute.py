"""The check's own process: the system description, then each child process under its share of the time limit.

    results, processes = run_check(plan, out, time_limit_s=360, repo=Path("."), on_change=write_reports)

The check itself imports no framework: it takes the system description (NVML) in-process, whatever the
limit (it takes under a second), then starts
the plan's processes one after another (one per framework, worker.py; then pytest's, pytest_steps.py),
each in its own session with JAX's memory preallocation off and TensorFlow's memory growth on, so each
framework's allocator shows what its runs use and none holds the whole GPU. A process gets a share of the
time still left (budget.share_of: in proportion to its estimate). A process is
killed with its children (compile workers, DataLoader workers, LoadGen threads) at the end of its share;
the step it was in is then timed out, and the steps it never reached are not run.

Every step's record reaches `on_change` as soon as it ends, with every process's record so far, so the
reports written there (report.py) always say what finished.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from levelfield.cli.device_check.budget import MIN_STEP_S, share_of
from levelfield.cli.device_check.events import (
    EVENTS_FD_ENV,
    SPEC_ENV,
    EventReader,
    finished,
    output_to,
    pending,
    tail,
)
from levelfield.cli.device_check.figures import FIGURES, SYSTEM_FILE, UNUSABLE
from levelfield.cli.device_check.plan import CHECK_PROCESS, EQUIVALENCE_PROCESS, Plan, Step

POLL_S = 1.0  # how long the check waits for an event before it looks at the clock and the child again
DRAIN_S = 0.2  # after a child ended: how long to wait for the events still in its pipe
CHILD_ENV = {
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",  # JAX takes 75% of the GPU's memory at start otherwise
    "TF_FORCE_GPU_ALLOW_GROWTH": "true",  # TensorFlow likewise takes it all
    "PYTHONUNBUFFERED": "1",  # a killed child's last words reach its log
    # The checkout's levelfield/ folder must not shadow an installed (non-editable) levelfield when the
    # child runs from the checkout: node.sh installs it into a folder of its own.
    "PYTHONSAFEPATH": "1",
}
PYTEST_PLUGIN = "levelfield.cli.device_check.pytest_steps"


class Check:
    """The records of one check: its steps by id in plan order, and its processes as they ran."""

    def __init__(self, plan: Plan, out: Path, on_change: Callable[[list[dict], list[dict]], None]):
        self.plan, self.out, self.on_change = plan, out, on_change
        self.results = {step.id: pending(step) for step in plan.steps}
        self.processes: list[dict] = []

    def record(self, result: dict) -> None:
        self.results[result["id"]] = result
        self.changed()

    def changed(self) -> None:
        self.on_change(list(self.results.values()), self.processes)


def run_check(
    plan: Plan,
    out: Path,
    time_limit_s: float,
    repo: Path,
    *,
    force: bool = False,
    rules_dir: str | None = None,
    on_change: Callable[[list[dict], list[dict]], None] = lambda results, processes: None,
) -> tuple[list[dict], list[dict]]:
    """Every step's record (status passed | failed | timed_out | not_run), in plan order, and every process's."""
    deadline = time.monotonic() + time_limit_s
    check = Check(plan, out, on_change)
    check.changed()  # the report exists from the start: a check killed at once still has one
    for step in plan.process_steps(CHECK_PROCESS):
        check.record(sysinfo(step, out))
    names = plan.processes()
    for i, name in enumerate(names):
        left = deadline - time.monotonic()
        share_s = share_of(left, [plan.process_estimate_s(n) for n in names[i:]])
        if share_s < MIN_STEP_S:
            for step in plan.process_steps(name):
                reason = f"time limit: {max(share_s, 0):.0f} s of {time_limit_s:.0f} s left for its process"
                check.results[step.id] = {**pending(step), "reason": reason}
            check.processes.append({"process": name, "share_s": round(max(share_s, 0), 1), "exit": "not started"})
            check.changed()
            continue
        spec = {
            "out": str(out),
            "force": force,
            "rules_dir": rules_dir,
            "rules_version": plan.rules_version,
            "deadline": time.monotonic() + share_s,
            "log": f"logs/{name}.log",
            "steps": [asdict(step) for step in plan.process_steps(name)],
        }
        run_process(check, name, spec, repo, command)
    check.changed()
    return list(check.results.values()), check.processes


def sysinfo(step: Step, out: Path) -> dict:
    """`levelfield sysinfo --out OUT/system.json` in this process (NVML; no framework imported)."""
    from levelfield.cli.commands.sysinfo import generate

    log = out / "logs" / f"{step.id}.log"
    started = time.monotonic()
    error = None
    with output_to(log):
        try:
            generate(out / SYSTEM_FILE, overwrite=True)
        except Exception as e:  # a failed step is a result
            traceback.print_exc()
            error = f"{type(e).__name__}: {e}"
    fields = {"log": str(log.relative_to(out)), "pid": os.getpid()}
    try:
        fields["figures"] = FIGURES["sysinfo"](out, step)
    except UNUSABLE as e:
        error = error or f"{type(e).__name__}: {e}"
    if error:
        return finished(step, "failed", time.monotonic() - started, reason=error, output_tail=tail(log), **fields)
    return finished(step, "passed", time.monotonic() - started, **fields)


def command(plan: Plan, process: str, spec_path: Path, events_fd: int) -> tuple[list[str], dict[str, str]]:
    """The child's command line and what it adds to the environment: a framework's worker, or pytest."""
    if process != EQUIVALENCE_PROCESS:
        worker = [sys.executable, "-m", "levelfield.cli.device_check.worker", "--spec", str(spec_path)]
        return [*worker, "--events-fd", str(events_fd)], {}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", PYTEST_PLUGIN]
    args += ["--continue-on-collection-errors", "-k", plan.equivalence_select or ""]
    args += [step.module for step in plan.process_steps(process)]
    env = {SPEC_ENV: str(spec_path), EVENTS_FD_ENV: str(events_fd)}
    return args, {**env, "LEVELFIELD_TEST_FRAMEWORKS": plan.equivalence_frameworks or ""}


Launcher = Callable[[Plan, str, Path, int], tuple[list[str], dict[str, str]]]


def run_process(check: Check, name: str, spec: dict, repo: Path, launcher: Launcher) -> None:
    """Start one child (`launcher` gives its command and environment: `command` does), record its events as
    they come, and stop it at its share's end (module docstring)."""
    spec_path = check.out / "logs" / f"{name}.spec.json"
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(json.dumps(spec, indent=2) + "\n")
    share_s = spec["deadline"] - time.monotonic()
    record = {"process": name, "share_s": round(share_s, 1), "startup_s": None, "seconds": None, "exit": None}
    check.processes.append(record)
    read_fd, write_fd = os.pipe()
    args, env = launcher(check.plan, name, spec_path, write_fd)
    started = time.monotonic()
    running: tuple[str, float] | None = None  # the step in progress and when it began
    reported: set[str] = set()
    with open(check.out / spec["log"], "w", encoding="utf-8") as log:
        child = subprocess.Popen(
            args,
            cwd=repo,
            env={**os.environ, **CHILD_ENV, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # killed with everything it started
            pass_fds=(write_fd,),
        )
    os.close(write_fd)
    check.changed()  # the report shows the process running
    reader = EventReader(read_fd)
    killed = False
    try:
        while True:
            ended = child.poll() is not None
            if not ended and time.monotonic() >= spec["deadline"]:
                _kill(child)
                killed = True
            wait = DRAIN_S if ended or killed else min(POLL_S, spec["deadline"] - time.monotonic())
            events = reader.events(wait)
            for event in events:
                if event["event"] == "ready":
                    record["startup_s"] = round(time.monotonic() - started, 1)
                    check.changed()
                elif event["event"] == "start":
                    running = event["id"], time.monotonic()
                elif event["event"] == "result":
                    reported.add(event["result"]["id"])
                    running = None if running and running[0] == event["result"]["id"] else running
                    check.record(event["result"])
            if (ended or killed) and not events:
                break
    finally:
        if child.poll() is None:  # the check itself was interrupted
            _kill(child)
        _kill_group(child)  # what the child left behind (forked workers): ours to end
        reader.close()
    record["seconds"] = round(time.monotonic() - started, 1)
    record["exit"] = "killed at the end of its share" if killed else child.returncode
    _close_unreported(check, name, reported, running, killed, child.returncode, share_s)


def _close_unreported(
    check: Check,
    name: str,
    reported: set[str],
    running: tuple[str, float] | None,
    killed: bool,
    code: int,
    share_s: float,
) -> None:
    """The step a child was in when it ended or was killed, and those it never reached."""
    for step in check.plan.process_steps(name):
        if step.id in reported:
            continue
        if running is not None and step.id == running[0]:
            log = check.out / "logs" / (f"{step.id}.log" if name != EQUIVALENCE_PROCESS else f"{name}.log")
            seconds = time.monotonic() - running[1]
            if killed:
                status = "timed_out"
                reason = f"time limit: killed after {seconds:.0f} s, at the end of its process's share"
            else:
                status, reason = "failed", f"its process ended ({_exit_text(code)}) during this step"
            fields = {"log": str(log.relative_to(check.out)), "output_tail": tail(log)}
            check.results[step.id] = finished(step, status, seconds, reason=reason, **fields)
        elif killed:
            reason = f"time limit: its process's share ({share_s:.0f} s) ran out"
            check.results[step.id] = {**pending(step), "reason": reason}
        else:
            reason = f"no result: its process ended ({_exit_text(code)}) without running it"
            check.results[step.id] = {**pending(step), "reason": reason}
    check.changed()


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        return f"signal {signal.Signals(-code).name}"
    return f"exit status {code}"


def _kill(child: subprocess.Popen) -> None:
    _kill_group(child)
    child.wait()


def _kill_group(child: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone, with everything it started
        os.killpg(child.pid, signal.SIGKILL)
