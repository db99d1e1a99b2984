"""The environment fingerprint: which software produced a result.

    from levelfield.ground.environment import environment_fingerprint
    env = environment_fingerprint("pytorch")

Versions come from package metadata (nothing is imported). A run of a
plugin's framework (docs/plugins.md) also records the plugin: its
distribution, version and the SHA-256 of its installed files
(`ground/plugins.py`), which `levelfield package` copies into the tree and
`levelfield reproduce` requires installed. The levelfield git
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
from levelfield.ground.errors import UserError
from levelfield.ground.plugins import distribution_code
from levelfield.ground.registry import BUILTIN_FRAMEWORKS, plugin_framework
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
    if framework is not None and framework not in BUILTIN_FRAMEWORKS:
        env["plugin"] = plugin_record(framework)
    env["digest"] = hashlib.sha256(
        json.dumps(digested_fields(env), sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    return env


def plugin_record(framework: str) -> dict:
    """The plugin whose code a run of `framework` runs: {"distribution", "version", "sha256"}."""
    declaration = plugin_framework(framework)
    code = distribution_code(declaration.distribution) if declaration is not None else None
    if code is None:  # the runner and trainer load the plugin before any fingerprint: not reached by them
        raise UserError(f"framework {framework!r}: no installed plugin declares it")
    return code.record()


def digested_fields(env: dict) -> dict:
    """The fields of an environment fingerprint its digest covers: all but the digest and levelfield_git,
    of which only the commit (whether tracked files were modified may change between runs of one checkout,
    and is judged on its own). `env` may be untrusted: a levelfield_git that is not an object gives commit None."""
    git = env.get(LK.GIT)
    fields = {key: value for key, value in env.items() if key not in (LK.GIT, "digest")}
    return fields | {"commit": git.get("commit") if isinstance(git, dict) else None}
