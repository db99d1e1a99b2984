"""The state of the levelfield checkout a run used: its commit, and which tracked files were modified.

    from levelfield.ground.git_state import git_state
    git_state()   # {"commit": "3ba7...", "dirty": False, "dirty_files": []}; nulls outside a checkout
    code_age("3ba7...")   # {"relation": "older", "commits_behind": 12}: that commit against this HEAD

Apart from environment.py so that the checker, which reads recorded
fingerprints, never loads a module that starts a process.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

_MAX_DIRTY_FILES_LISTED = 20
_HEX = re.compile(r"[0-9a-f]{7,64}")  # a git object name as levelfield records it
_CHECKOUT = Path(__file__).resolve().parents[2]  # where levelfield runs from (a checkout, or site-packages)
# What produces a result's figures (git pathspecs): the implementations and harness, the rules (not their
# JSON Schemas, which only validate files), the CLI and ground floor, the packager, and the dependency pins.
# A change to the checker, the leaderboard, the fuzzer, docs/, tests/, benchmarks/ or submissions/ does not.
CODE_PATHS = (
    "reference",
    "rules",
    ":(exclude)rules/schemas",
    "levelfield",
    "tools/package.py",
    "setup.cfg",
    "pyproject.toml",
)


def git_state(start: Path | None = None) -> dict:
    """Commit of the levelfield checkout and its modified tracked files; nulls outside a checkout."""
    root = str(start or _CHECKOUT)
    state = {"commit": None, "dirty": None, "dirty_files": []}
    commit = _head(root)
    status = None if commit is None else _git(root, "status", "--porcelain", "--untracked-files=no")
    if status is None:
        return state
    files = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    return {"commit": commit, "dirty": bool(files), "dirty_files": files[:_MAX_DIRTY_FILES_LISTED]}


def _head(root: str) -> str | None:
    """The checkout's HEAD commit; None outside a checkout or without git."""
    done = _git(root, "rev-parse", "HEAD")
    return done.stdout.strip() if done is not None and done.returncode == 0 else None


def code_age(commit: str | None, start: Path | None = None) -> dict:
    """How the commit `commit` relates to this checkout's HEAD: {"relation", "commits_behind", "code_files_changed"}.

    relation: "same"; "older" (an ancestor of HEAD, commits_behind = how many commits HEAD has that it
    lacks); "newer" (HEAD is its ancestor); "diverged" (neither); "foreign" (a commit this checkout does
    not hold); "unknown" (nothing to compare: no commit recorded, or no checkout here).
    code_files_changed: how many files under CODE_PATHS differ between the two commits (None where there is
    nothing to diff): a tree committed after the commit that produced it, with nothing but the tree
    changed, is 1 commit older and 0 files of code. A leaderboard says with it that a tree's figures come
    from other code than the code showing them.
    """
    unknown = {"relation": "unknown", "commits_behind": None, "code_files_changed": None}
    if not isinstance(commit, str) or not _HEX.fullmatch(commit):  # untrusted text from a tree: never an option
        return unknown
    root = str(start or _CHECKOUT)
    head = _head(root)  # only the commit: whether files are modified is git_state's question
    if head is None:
        return unknown
    if commit == head:
        return {"relation": "same", "commits_behind": 0, "code_files_changed": 0}

    def is_ancestor(a: str, b: str) -> bool | None:
        done = _git(root, "merge-base", "--is-ancestor", a, b)
        return None if done is None or done.returncode not in (0, 1) else done.returncode == 0

    older = is_ancestor(commit, head)
    if older is None:  # git could not resolve the commit: not in this checkout (rc 128)
        return {**unknown, "relation": "foreign"}
    diff = _git(root, "diff", "--name-only", commit, head, "--", *CODE_PATHS)
    changed = len(diff.stdout.splitlines()) if diff is not None and diff.returncode == 0 else None
    if older:
        counted = _git(root, "rev-list", "--count", f"{commit}..{head}")
        behind = int(counted.stdout) if counted is not None and counted.stdout.strip().isdigit() else None
        return {"relation": "older", "commits_behind": behind, "code_files_changed": changed}
    relation = "newer" if is_ancestor(head, commit) else "diverged"
    return {"relation": relation, "commits_behind": None, "code_files_changed": changed}


def _git(root: str, *args: str) -> subprocess.CompletedProcess | None:
    """git -C root ARGS (no shell); None when git cannot run."""
    try:
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
