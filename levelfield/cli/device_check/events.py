"""What a check process tells the check, and the record of a step it carries.

    send(fd, "ready")                                         # imports done: the first step can start
    send(fd, "start", id=step.id)                             # a step begins
    send(fd, "result", result=finished(step, "passed", 12.3, figures={...}))
    with output_to(out / "logs" / "tta-ctr-dlrm-jax.log"):    # a step's own output, C++ libraries' too
        ...

Events travel as one JSON object per line on a pipe the check opens for each child process (its write
end is the fd named by `--events-fd` or EVENTS_FD_ENV), so a child's own output, which frameworks and
LoadGen write freely, never mixes with them. The check writes its reports after every result; a child
that dies, or is killed at its share of the time limit, leaves the steps it never reported to the check
(execute.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from levelfield.cli.device_check.plan import Step

EVENTS_FD_ENV = "LEVELFIELD_DEVICE_CHECK_EVENTS_FD"
SPEC_ENV = "LEVELFIELD_DEVICE_CHECK_SPEC"  # the JSON file that says what a child process runs
STATUSES = ("passed", "failed", "timed_out", "not_run")
OUTPUT_TAIL_CHARS = 2000  # of a step's output that did not pass, kept in the report


def pending(step: Step) -> dict:
    """A step's record before it ran: its plan entry, status not_run."""
    return {**asdict(step), "status": "not_run", "seconds": None, "figures": {}, "reason": None}


def finished(step: Step, status: str, seconds: float | None, **fields: object) -> dict:
    """A step's record once it ended (figures, reason, log, output_tail as keyword fields)."""
    record = pending(step)
    record.update(status=status, seconds=None if seconds is None else round(seconds, 1), **fields)
    return record


def tail(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-OUTPUT_TAIL_CHARS:]
    except OSError:
        return ""


def cpu_s() -> float:
    """Host CPU seconds of this process and the children it waited for (DataLoader and compile workers):
    beside a step's wall time, what it cost on a host that other work slows down."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def send(fd: int, event: str, **fields: object) -> None:
    """One event, whole: a pipe write of any length, repeated until every byte is out."""
    data = (json.dumps({"event": event, **fields}) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


class EventReader:
    """The check's end of a child's event pipe: `events(timeout_s)` yields what arrived, [] on silence."""

    def __init__(self, fd: int):
        self.fd, self.buffer, self.closed = fd, b"", False

    def events(self, timeout_s: float) -> list[dict]:
        if self.closed:
            return []
        ready, _, _ = select.select([self.fd], [], [], max(timeout_s, 0))
        if not ready:
            return []
        chunk = os.read(self.fd, 65536)
        if not chunk:  # every write end closed: the child ended
            self.closed = True
            return []
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]

    def close(self) -> None:
        os.close(self.fd)


@contextlib.contextmanager
def output_to(path: Path) -> Iterator[None]:
    """File descriptors 1 and 2 into `path` (appended) for the block: Python's output and that of the C++
    libraries beneath it (XLA, LoadGen, cuDNN) alike, so each step keeps its own log."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
