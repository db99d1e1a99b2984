"""One MLLOG result file per training run, written through `mlperf_logging.mllog`.

    log = RunLog(out / "result_0.txt")
    log.event("seed", 1234)
    log.start("epoch_start", metadata={"epoch_num": 1})
    ...
    log.close()          # the file takes its final name only now

Lines are written (and flushed) to `result_0.txt.inprogress` as they happen;
`close()` renames it. A process killed mid-run therefore leaves only an
`.inprogress` file, which nothing treats as a result, while a run stopped by
SIGINT/SIGTERM gets a `run_stop` with status `aborted` before it is closed. A
run that crashed is closed with `close(final=False)`: its file keeps the
`.inprogress` name. In multi-process training only rank 0 writes a RunLog;
the other ranks log to a `NullLog`, which writes nothing.
A line that cannot be written (a full disk) stops the run with one error naming
the file; logging's own handlers would print an error per line and go on.
Each RunLog has its own `logging.Logger`, so runs never share mllog's
process-wide default logger and nothing leaks to stdout.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sys
from pathlib import Path
from typing import Any

from mlperf_logging.mllog.mllog import MLLogger

from levelfield.ground.errors import UserError

INPROGRESS_SUFFIX = ".inprogress"
_ids = itertools.count()
_CALLER_OFFSET = 3  # frames between mllog's caller lookup and the line that called RunLog (see RunLog.__init__)


class _StrictFileHandler(logging.FileHandler):
    """A FileHandler whose failed writes raise: a result log must not lose lines and carry on."""

    def handleError(self, record: logging.LogRecord) -> None:
        raise sys.exception()  # called by emit() inside its `except`: the write's OSError


class RunLog:
    def __init__(self, path: Path, *, overwrite: bool = False):
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + INPROGRESS_SUFFIX)
        if self.path.exists() and not overwrite:
            raise UserError(f"{self.path}: already exists; not overwriting a result", hint="pass --force to replace it")
        self.failed: OSError | None = None  # the first write that failed; the log writes nothing after it
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"{self.path.parent}: cannot create the folder ({e.strerror})") from None
        try:
            self._handler = _StrictFileHandler(self.partial, mode="w", encoding="utf-8")
        except OSError as e:
            raise UserError(f"{self.partial}: cannot write ({e.strerror})") from None
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        self._logger = logging.getLogger(f"levelfield.runlog.{next(_ids)}")
        self._logger.propagate = False
        self._logger.setLevel(logging.INFO)
        self._logger.addHandler(self._handler)
        # The metadata's file/lineno must name the trainer line that logged, not this wrapper: mllog looks
        # 2 + offset frames up from its get_caller, past its own _log_helper and event/start/end, then
        # RunLog._write and RunLog.event/start/end, so 3.
        self._mllog = MLLogger(
            logger=self._logger, default_stack_offset=_CALLER_OFFSET, root_dir=str(Path(__file__).resolve().parents[2])
        )
        self.closed = False

    # time_ms: the line's time (ms since the epoch, as mllog writes it); None: now. Given where a line records
    # a reading taken earlier: run_start and the lines that close a run carry the times the trainer prices the
    # run by, a step window's lines its clock readings (levelfield/harness/throughput.py), so that each
    # line's time_ms and its reading agree.
    def event(self, key: str, value: Any = None, metadata: dict | None = None, time_ms: int | None = None) -> None:
        self._write(self._mllog.event, key, value, metadata, time_ms)

    def start(self, key: str, value: Any = None, metadata: dict | None = None, time_ms: int | None = None) -> None:
        self._write(self._mllog.start, key, value, metadata, time_ms)

    def end(self, key: str, value: Any = None, metadata: dict | None = None, time_ms: int | None = None) -> None:
        self._write(self._mllog.end, key, value, metadata, time_ms)

    def _write(self, log_line, key: str, value, metadata: dict | None, time_ms: int | None) -> None:
        if self.failed:  # the run is already stopping with the first failure's error
            return
        try:
            log_line(key=key, value=value, metadata=metadata, time_ms=time_ms)
        except OSError as e:
            self._fail(e)

    def _fail(self, error: OSError):
        self.failed = error
        raise UserError(
            f"{self.partial}: cannot write ({error.strerror}); the run stops and its log is not a result",
            hint="free disk space and run again",
        ) from None

    def close(self, *, final: bool = True) -> Path:
        """Flush, fsync and (final=True) give the file its final name; returns where the file now is.

        A log that could not be written keeps its .inprogress name; if the failure shows only
        now, at the flush, close raises the write error.
        """
        if self.closed:
            return self.path if self.path.exists() else self.partial
        self.closed = True
        failed_before = self.failed
        try:
            if not failed_before:
                self._handler.flush()
                os.fsync(self._handler.stream.fileno())
        except OSError as e:
            self.failed = e
        finally:
            self._logger.removeHandler(self._handler)
            with contextlib.suppress(OSError):  # closing flushes again, and fails again on a full disk
                self._handler.close()
        if self.failed:
            if not failed_before:
                self._fail(self.failed)
            return self.partial
        if final:
            os.replace(self.partial, self.path)
        return self.path if final else self.partial


class NullLog:
    """The log of ranks other than 0 in multi-process training: only rank 0 writes the result file."""

    path = None

    def event(self, key: str, value: Any = None, metadata: dict | None = None, time_ms: int | None = None) -> None:
        pass

    start = end = event

    def close(self, *, final: bool = True) -> None:
        return None
