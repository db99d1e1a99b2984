"""The state of the levelfield checkout a run used: its commit, and which tracked files were modified.

    from levelfield.ground.git_state import git_state
    git_state()   # {"commit": "3ba7...", "dirty": False, "dirty_files": []}; nulls outside a checkout

Apart from environment.py so that the checker, which reads recorded
fingerprints, never loads a module that starts a process.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

_MAX_DIRTY_FILES_LISTED = 20


def git_state(start: Path | None = None) -> dict:
    """Commit of the levelfield checkout and its modified tracked files; nulls outside a checkout."""
    root = start or Path(__file__).resolve().parents[2]
    state = {"commit": None, "dirty": None, "dirty_files": []}
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return state
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return state
    files = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    return {"commit": commit.stdout.strip(), "dirty": bool(files), "dirty_files": files[:_MAX_DIRTY_FILES_LISTED]}
