"""One MLLOG result file per training run, written through `mlperf_logging.mllog`.

    log = RunLog(out / "result_0.txt")
    log.event("seed", 1234)
    log.start("epoch_start", metadata={"epoch_num": 1})
    ...
    log.close()          # the file takes its final name only now

Lines are written (and flushed) to `result_0.txt.inprogress` as they happen;
`close()` renames it. A process killed mid-run therefore leaves only an
`.inprogress` file, which nothing treats as a result, while a run stopped by
SIGINT/SIGTERM gets a `run_stop` with status `aborted` before it is closed.
Each RunLog has its own `logging.Logger`, so runs never share mllog's
process-wide default logger and nothing leaks to stdout.
"""

from __future__ import annotations

import itertools
import logging
import os
from pathlib import Path

from mlperf_logging.mllog.mllog import MLLogger

from levelfield.errors import UserError

INPROGRESS_SUFFIX = ".inprogress"
_ids = itertools.count()


class RunLog:
    def __init__(self, path: Path, *, overwrite: bool = False):
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + INPROGRESS_SUFFIX)
        if self.path.exists() and not overwrite:
            raise UserError(f"{self.path}: already exists; not overwriting a result", hint="pass --force to replace it")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handler = logging.FileHandler(self.partial, mode="w", encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        self._logger = logging.getLogger(f"levelfield.runlog.{next(_ids)}")
        self._logger.propagate = False
        self._logger.setLevel(logging.INFO)
        self._logger.addHandler(self._handler)
        # stack offset 2: the metadata's file/lineno name the trainer line that logged, not this wrapper.
        self._mllog = MLLogger(logger=self._logger, default_stack_offset=2,
                                root_dir=str(Path(__file__).resolve().parents[2]))
        self.closed = False

    def event(self, key: str, value=None, metadata: dict | None = None) -> None:
        self._mllog.event(key=key, value=value, metadata=metadata)

    def start(self, key: str, value=None, metadata: dict | None = None) -> None:
        self._mllog.start(key=key, value=value, metadata=metadata)

    def end(self, key: str, value=None, metadata: dict | None = None) -> None:
        self._mllog.end(key=key, value=value, metadata=metadata)

    def close(self) -> Path:
        """Flush, fsync and give the file its final name."""
        if self.closed:
            return self.path
        self._handler.flush()
        os.fsync(self._handler.stream.fileno())
        self._logger.removeHandler(self._handler)
        self._handler.close()
        os.replace(self.partial, self.path)
        self.closed = True
        return self.path
