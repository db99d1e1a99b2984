"""Cross-check training logs with the peer engine: mlperf_logging's compliance checker.

    ok, report = peer_compliance(Path("runs/x/result_0.txt"))

The engine runs in a subprocess with levelfield's ruleset
(`rules/<version>/mllog/training.yaml`, passed by absolute path through
`--config`). Its rules are Python expressions the engine evaluates, so it is
only ever pointed at logs levelfield wrote itself; the submission checker has
its own rules and evaluates nothing it reads.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the rules are loaded when no suite is given
    from levelfield.rules.loader import Suite

# The engine needs a ruleset name even when --config names the file; this is the newest it ships.
ENGINE_RULESET = "6.1.0"


def ruleset_path(suite: Suite) -> Path:
    return suite.path / "mllog" / "training.yaml"


def peer_compliance(log: Path, suite: Suite | None = None, timeout_s: float = 120) -> tuple[bool, str]:
    """(passed, the engine's output) for one MLLOG file."""
    if suite is None:
        from levelfield.rules import load_suite

        suite = load_suite()
    with tempfile.TemporaryDirectory() as scratch:  # the engine writes its own log file into the cwd
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "mlperf_logging.compliance_checker",
                "--usage",
                "training",
                "--ruleset",
                ENGINE_RULESET,
                "--config",
                str(ruleset_path(suite).resolve()),
                "--log_output",
                str(Path(scratch) / "compliance.log"),
                str(Path(log).resolve()),
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=scratch,
        )
    return done.returncode == 0, (done.stdout + done.stderr).strip()
