"""The environment fingerprint: which software produced a result.

    from levelfield.ground.environment import environment_fingerprint
    env = environment_fingerprint("pytorch")

Versions come from package metadata (nothing is imported): the packages that
decide a result by name (`packages`), and every installed distribution with its
version (`distributions`, PEP 503 names) and a SHA-256 over that list
(`distributions_digest`), so a reproduction can see any library that moved. The
host's settings that change how fast the same hardware runs (CPU frequency
policy, SMT, microcode, kernel, NUMA, container image; the GPUs' application
clocks, power limits, ECC and persistence) sit under `host` (host_settings.py,
accelerators.gpu_settings). A run of a plugin's framework (docs/plugins.md)
also records the plugin: its distribution, version and the SHA-256 of its
installed files (`ground/plugins.py`), which `levelfield package` copies into
the tree and `levelfield reproduce` requires installed. The digest covers all
of it but the git state's modified files and the GPUs' clocks of the moment
(`VOLATILE`), which move between runs of one environment. The levelfield git
commit is recorded with a `dirty` flag that looks at tracked files only and
lists them (git_state.py): MLPerf's checker fails on *any* changed file in the
tree, which its users report as noise; levelfield records, and the checker
decides, reading fingerprints with `digested_fields` and nothing that runs.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import re
import site

from levelfield import __version__
from levelfield.ground import mllog_keys as LK
from levelfield.ground.errors import UserError
from levelfield.ground.plugins import distribution_code
from levelfield.ground.registry import BUILTIN_FRAMEWORKS, plugin_framework
from levelfield.ground.sysinfo import SOFTWARE_DISTRIBUTIONS, installed_version

# Distributions whose versions enter every log (a missing one is null): the system
# description's software list plus Keras, whose version decides the TensorFlow code path.
PACKAGES = {**SOFTWARE_DISTRIBUTIONS, "keras": ["keras"]}
# Per GPU, the clocks it ran at when the record was taken (they follow load and temperature): recorded for
# people, outside the digest and REP001's comparison.
VOLATILE_GPU_FIELDS = ("clocks_mhz",)


def _normalized(name: str) -> str:
    """PEP 503's form of a distribution name: `Flax_NNX` and `flax-nnx` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installation_paths() -> list[str]:
    """Where this interpreter's distributions are installed: $PYTHONPATH's folders, then site-packages (and the
    user's, where Python reads it), in import order. Not sys.path, which code may extend while a run goes on:
    importing setuptools (torch.compile's C++ builder does) puts the distributions it vendors on it, and a
    compiled PyTorch inference run then listed 9 more than its training run in one environment (REP001)."""
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    paths += site.getsitepackages()
    if site.ENABLE_USER_SITE:
        paths.append(site.getusersitepackages())
    return list(dict.fromkeys(paths))


def installed_distributions() -> dict[str, str]:
    """{name: version} of every distribution installed where this interpreter installs (`installation_paths`),
    by normalised name, sorted; where a name is installed twice, the first one (the one `import` finds)."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions(path=installation_paths()):
        name = dist.metadata["Name"]
        if name:
            found.setdefault(_normalized(name), dist.version)
    return dict(sorted(found.items()))


def distributions_digest(distributions: dict[str, str]) -> str:
    """SHA-256 over `name==version` lines sorted by name (pip freeze's form), so a list can be checked
    against its digest and two lists compared by it."""
    lines = "".join(f"{name}=={version}\n" for name, version in sorted(distributions.items()))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def host_record() -> dict:
    """The host's settings (host_settings.py) and its GPUs' (NVML; "not exposed" on a CPU system)."""
    from levelfield.ground.accelerators import query_gpu_settings
    from levelfield.ground.host_settings import host_settings

    return {**host_settings(), "gpus": query_gpu_settings()}


def environment_fingerprint(framework: str | None = None) -> dict:
    """Python, levelfield (version, commit, dirty), the versions of every relevant package and of every
    installed distribution, and the host's settings."""
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
    env["distributions"] = installed_distributions()
    env["distributions_digest"] = distributions_digest(env["distributions"])
    env["host"] = host_record()
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
    and is judged on its own), and but each GPU's VOLATILE_GPU_FIELDS. `env` may be untrusted: a
    levelfield_git that is not an object gives commit None; a host or GPU entry that is not an object is
    kept as it is."""
    git = env.get(LK.GIT)
    fields = {key: value for key, value in env.items() if key not in (LK.GIT, "digest")}
    host = fields.get("host")
    if isinstance(host, dict) and isinstance(host.get("gpus"), list):
        gpus = [
            {k: v for k, v in gpu.items() if k not in VOLATILE_GPU_FIELDS} if isinstance(gpu, dict) else gpu
            for gpu in host["gpus"]
        ]
        fields["host"] = {**host, "gpus": gpus}
    return fields | {"commit": git.get("commit") if isinstance(git, dict) else None}
