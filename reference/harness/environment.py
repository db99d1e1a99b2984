"""The environment fingerprint: which software produced a result.

    from levelfield.reference.harness.environment import environment_fingerprint
    env = environment_fingerprint("pytorch")

Versions come from package metadata (nothing is imported). The levelfield git
commit is recorded with a `dirty` flag that looks at tracked files only and
lists them: MLPerf's checker fails on *any* changed file in the tree, which
its users report as noise; levelfield records, and the checker decides.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import subprocess
from pathlib import Path

from levelfield import __version__

# Distributions whose versions enter every log; a missing one is recorded as null.
PACKAGES = {
    "numpy": ["numpy"],
    "torch": ["torch"],
    "tensorflow": ["tensorflow", "tensorflow-cpu"],
    "keras": ["keras"],
    "jax": ["jax"],
    "jaxlib": ["jaxlib"],
    "flax": ["flax"],
    "optax": ["optax"],
    "mlcommons_loadgen": ["mlcommons-loadgen"],
    "mlperf_logging": ["mlperf-logging"],
}
_MAX_DIRTY_FILES_LISTED = 20


def _version(distributions: list[str]) -> str | None:
    for dist in distributions:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def git_state(start: Path | None = None) -> dict:
    """Commit of the levelfield checkout and its modified tracked files; nulls outside a checkout."""
    root = start or Path(__file__).resolve().parents[2]
    state = {"commit": None, "dirty": None, "dirty_files": []}
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return state
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return state
    files = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    return {"commit": commit.stdout.strip(), "dirty": bool(files), "dirty_files": files[:_MAX_DIRTY_FILES_LISTED]}


def environment_fingerprint(framework: str | None = None) -> dict:
    """Python, levelfield (version, commit, dirty), and the versions of every relevant package."""
    env = {
        "python": platform.python_version(),
        "levelfield": __version__,
        "levelfield_git": git_state(),
        "framework": framework,
        "packages": {key: _version(dists) for key, dists in PACKAGES.items()},
    }
    stable = {k: v for k, v in env.items() if k != "levelfield_git"} | {"commit": env["levelfield_git"]["commit"]}
    env["digest"] = hashlib.sha256(json.dumps(stable, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return env
