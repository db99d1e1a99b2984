"""mlperf_logging's own engines, applied to copies of an MLCommons tree's files.

    with materialized({"result_0.txt": data, ...}) as folder:
        compliance_messages(folder / "result_0.txt", "4.0.0")   # [] when the log complies
        rcp_verdict(folder, "4.0.0")                            # (passed, message, score normalisation)

The peer reads files by path and writes scaling.json into the folder it checks
when asked to, so it only ever sees a temporary folder holding bytes the
bounded tree reader returned: nothing in the audited tree is opened twice or
written. Its log output is captured, not printed; what it says becomes the
findings' messages.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

USAGE = "training"
TOKEN = b":::MLLOG "
# mlperf_logging's log parser strips what precedes the token with re.sub(".*:::MLLOG ", ...), whose
# backtracking costs about the square of a line's length: ~0.02 s for a 4 KiB line, ~3.4 s for 64 KiB,
# hours for the 8 MiB lines the checker's own reader accepts. Published lines are under 2 KiB (1,577
# characters at most in Training v4.0), so a log whose sum of squared token-line lengths exceeds this
# (about 2 s of the peer's parsing here) is not handed to it.
MAX_PARSE_COST = 2 * 10**9


def parse_cost(data: bytes) -> int:
    """The peer parser's work on `data`, in squared characters of the lines holding the MLLOG token."""
    return sum(len(line) ** 2 for line in data.split(b"\n") if TOKEN in line)


def too_costly(data: bytes) -> bool:
    return parse_cost(data) > MAX_PARSE_COST


class _Captured(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().strip())


@contextlib.contextmanager
def captured_logging() -> Iterator[_Captured]:
    """The peer's logging.warning/error lines, collected instead of printed."""
    root = logging.getLogger()
    handler, level = _Captured(), root.level
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@contextlib.contextmanager
def materialized(files: dict[str, bytes]) -> Iterator[Path]:
    """A temporary folder holding `files` ({name: bytes}), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="levelfield-peer-") as tmp:
        folder = Path(tmp)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        yield folder


def supported_rulesets() -> list[str]:
    from mlperf_logging.compliance_checker.mlp_compliance import rule_choices

    return sorted(rule_choices())


def compliance_messages(log: Path, ruleset: str) -> list[str]:
    """Why mlperf_logging's compliance checker rejects the log ([] when it accepts it)."""
    from mlperf_logging.compliance_checker import mlp_compliance

    checker = mlp_compliance.make_checker(usage=USAGE, ruleset=ruleset, quiet=True, werror=False)
    try:
        with captured_logging():
            valid = checker.check_file(str(log), f"{USAGE}_{ruleset}/common.yaml")
    except Exception as error:  # the peer's own failure on a damaged log: a rejection, with its reason
        return [f"the compliance checker stopped on this log: {type(error).__name__}: {str(error)[:200]}"]
    if valid:
        return []
    return [*checker.overwritable.values(), *checker.not_overwritable] or ["rejected without a message"]


def rcp_verdict(folder: Path, ruleset: str) -> tuple[bool, str, float]:
    """mlperf_logging's RCP check over the result files in `folder`: (passed, its message, score normalisation),
    as the result summarizer calls it (pruned RCPs, no bypass), without writing scaling.json."""
    from mlperf_logging.rcp_checker import rcp_checker

    try:
        with captured_logging():
            passed, message, norm = rcp_checker.check_directory(
            str(folder), USAGE, ruleset, False, False, rcp_file=None, rcp_pass="pruned_rcps", rcp_bypass=False,
            set_scaling=False,
        )  # fmt: skip
    except Exception as error:  # as the result summarizer, which reports such a failure and goes on
        return False, f"the RCP check stopped: {type(error).__name__}: {str(error)[:200]}", 1.0
    return bool(passed), str(message), float(norm)


def system_description_problems(path: Path, ruleset: str) -> list[str]:
    """Why mlperf_logging's system-description checker rejects the file ([] when it accepts it)."""
    from mlperf_logging.system_desc_checker.system_desc_checker import check_system_desc

    try:
        with captured_logging() as log:
            valid, *_ = check_system_desc(str(path), USAGE, ruleset)
    except Exception as error:
        return [f"the system-description checker stopped: {type(error).__name__}: {str(error)[:200]}"]
    return [] if valid else log.messages or ["rejected without a message"]
