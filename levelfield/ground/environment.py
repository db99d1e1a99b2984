"""The environment fingerprint: which software produced a result.

    from levelfield.ground.environment import environment_fingerprint
    env = environment_fingerprint("pytorch")

Versions come from package metadata (nothing is imported). The levelfield git
commit is recorded with a `dirty` flag that looks at tracked files only and
lists them (git_state.py): MLPerf's checker fails on *any* changed file in the
tree, which its users report as noise; levelfield records, and the checker
decides, reading fingerprints with `digested_fields` and nothing that runs.
"""

from __future__ import annotations

import hashlib
import json
import platform

from levelfield import __version__
from levelfield.ground import mllog_keys as LK
from levelfield.ground.sysinfo import SOFTWARE_DISTRIBUTIONS, installed_version

# Distributions whose versions enter every log (a missing one is null): the system
# description's software list plus Keras, whose version decides the TensorFlow code path.
PACKAGES = {**SOFTWARE_DISTRIBUTIONS, "keras": ["keras"]}


def environment_fingerprint(framework: str | None = None) -> dict:
    """Python, levelfield (version, commit, dirty), and the versions of every relevant package."""
    # Imported here: reading a fingerprint (the checker) must not load the module that runs git.
    from levelfield.ground.git_state import git_state

    env = {
        "python": platform.python_version(),
        "levelfield": __version__,
        LK.GIT: git_state(),
        "framework": framework,
        "packages": {key: installed_version(dists) for key, dists in PACKAGES.items()},
    }
    env["digest"] = hashlib.sha256(
        json.dumps(digested_fields(env), sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    return env


def digested_fields(env: dict) -> dict:
    """The fields of an environment fingerprint its digest covers: all but the digest and levelfield_git,
    of which only the commit (whether tracked files were modified may change between runs of one checkout,
    and is judged on its own). `env` may be untrusted: a levelfield_git that is not an object gives commit None."""
    git = env.get(LK.GIT)
    fields = {key: value for key, value in env.items() if key not in (LK.GIT, "digest")}
    return fields | {"commit": git.get("commit") if isinstance(git, dict) else None}
