"""How far an inference run got, and how an abort records it: the runner's main thread and the session share it.

    state = RunState(options)        # runner.infer, before anything else
    state.phase = "loadgen"          # session.py, as the run goes on
    raise state.abort("aborted", "interrupted by SIGINT", 130)   # result.json says so; InferAborted

Apart from runner.py because session.py, which the runner drives, takes one too.
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING

from levelfield.ground.fsutil import atomic_write_text

if TYPE_CHECKING:
    from levelfield.harness.options import InferOptions

# After an interrupt outside LoadGen, how long the main thread waits for the compute thread to
# reach its next predict boundary (a compilation can take seconds) before giving it up.
CANCEL_WAIT_S = 30.0

# Set when the compute thread of a run aborted in this process finishes (it may never): LoadGen's
# state is process-wide, so no second run may start beside a LoadGen still running.
_abandoned_work: threading.Event | None = None


def abandoned_work_running() -> bool:
    """The compute thread of a run aborted in this process is still busy (inside LoadGen, or a predict)."""
    return _abandoned_work is not None and not _abandoned_work.is_set()


class InferAborted(Exception):
    """The run did not complete; result.json (if --out was prepared) says "aborted" or "failed".

    exit_code: 128 + the signal's number (130 SIGINT, 143 SIGTERM, as `levelfield train`) or 1.
    loadgen_running: the compute thread is still busy (inside LoadGen, whose SUT answers nothing
    more, or a predict) and cannot be stopped: the process must end now, e.g. os._exit(exit_code),
    not start another run.
    """

    def __init__(self, message: str, *, status: str, exit_code: int, loadgen_running: bool):
        super().__init__(message)
        self.status, self.exit_code, self.loadgen_running = status, exit_code, loadgen_running


class RunState:
    """What the main thread and an abort need to know: how far the run got, and what to stop or record."""

    def __init__(self, options: InferOptions):
        self.options = options
        self.phase = "setup"  # setup | warmup | loadgen | scoring | writing
        self.out_ready = False  # --out prepared: result.json may be written
        self.identity: dict = {
            "task": options.task_id,
            "framework": options.framework,
            "scenario": options.scenario,
            "mode": options.mode,
            "profile": options.profile,
        }
        self.sut = None  # the SUT of the latest LoadGen run (session.py sets it)
        self.loadgen: threading.Event | None = None  # set when that run's StartTest has returned
        self.current = None  # session.Current while a LoadGen run is in progress
        self.cancelled = False  # asks the compute thread to stop at its next predict
        self.worker: threading.Thread | None = None
        self.work_done: threading.Event | None = None
        self.started = time.perf_counter()

    def worker_busy(self) -> bool:
        return self.work_done is not None and not self.work_done.is_set()

    def abort(self, status: str, reason: str, exit_code: int) -> InferAborted:
        """Stop answering, record the run as `status` (no metric, no accuracy.json), build the exception."""
        global _abandoned_work
        self.cancelled = True
        if self.sut is not None:
            self.sut.abandon()
        in_loadgen = self.loadgen is not None and not self.loadgen.is_set()
        if self.worker_busy() and not in_loadgen:  # warm-up or probes: stops at its next predict
            self.work_done.wait(CANCEL_WAIT_S)
        running = self.worker_busy()
        if running:
            _abandoned_work = self.work_done
        message = f"{reason} during {self.phase}"
        if self.out_ready:
            out = self.options.out
            (out / "accuracy.json").unlink(missing_ok=True)
            record = {
                "status": status,
                "reason": reason,
                "phase": self.phase,
                **self.identity,
                "elapsed_s": time.perf_counter() - self.started,
                "submittable": False,
            }
            atomic_write_text(out / "result.json", json.dumps(record, indent=2) + "\n", overwrite=True)
            message += f"; {out / 'result.json'} records the run as {status}"
        return InferAborted(message, status=status, exit_code=exit_code, loadgen_running=running)
