"""requirements.lock: levelfield's dependencies at one version each, with hashes, the frameworks left out.

    python -m levelfield.tools.lockfile --check                   # the lock against pyproject.toml (no network)
    python -m levelfield.tools.lockfile --out requirements.lock --force \\
        torch==2.13.0 jax==0.10.2 tensorflow-cpu==2.21.0 onnxruntime==1.31.1   # refresh (`make lock`; network, uv)

A reproduction months later must get the versions a result was measured with, and a package index can
serve a different file under an old version number; so `make setup` installs from this file with pip's
`--require-hashes`. The frameworks (FRAMEWORKS) are not in it: their CPU and CUDA builds are different
files under one version (PyPI's torch 2.13.0 for Linux is the CUDA build, the CPU build lies on another
index), so no hash holds for both; the Makefile pins them by version per ACCEL instead.

The lock is resolved together with the framework pins (uv's resolver, for CPython 3.11 on Linux x86-64,
from PyPI alone), so every shared dependency (numpy, ml-dtypes, protobuf ...) is at a version the
frameworks accept. Then it keeps what pyproject.toml's core and extras reach without passing through a
framework (flax, optax, pytest, ...), and leaves out what only a framework needs (keras, triton, the
nvidia-* wheels of PyPI's CUDA torch ...): those come with the framework, per ACCEL. The header records
the framework pins and the packages left out, so every line of the file is explained.

`lock_problems` is the agreement test (tests/test_lockfile.py): every non-framework requirement of
pyproject.toml's core and extras is in the lock at a version its specifier admits, no framework is, every
entry has hashes and is reached from pyproject.toml, and the framework pins satisfy pyproject's
specifiers. Refreshing needs `uv` (the dev extra) and the network; checking needs neither.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import textwrap
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements.lock"
PYPROJECT = REPO / "pyproject.toml"
# Framework wheels: one version, several builds (CPU, CUDA 12, CUDA 13), so pinned by version in the Makefile.
# jaxlib is JAX's compiled half, pinned to jax's own version by jax itself. ONNX Runtime's CPU and CUDA
# builds are two distributions (onnxruntime, onnxruntime-gpu) of one import package: the same choice per ACCEL.
FRAMEWORKS = frozenset({"torch", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "onnxruntime", "onnxruntime-gpu"})
# The one platform the lock is resolved for: the project's machines and CI (docs/packaging.md, The lock file).
PYTHON_VERSION = "3.11"
PYTHON_PLATFORM = "x86_64-manylinux_2_28"
# The environment markers of that platform, for pyproject's `; platform_machine == 'x86_64'` and the like.
MARKER_ENVIRONMENT = {
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "platform_machine": "x86_64",
    "platform_system": "Linux",
    "sys_platform": "linux",
    "os_name": "posix",
    "python_version": PYTHON_VERSION,
    "python_full_version": f"{PYTHON_VERSION}.0",
}
PYPROJECT_VIA = "levelfield (pyproject.toml)"  # how uv names a requirement of the project itself
FRAMEWORKS_LINE = "# frameworks: "
LEFT_OUT_LINE = "# left out: "
_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?:\s*\\)?$")
_HASH = re.compile(r"^\s+--hash=(sha256:[0-9a-f]{64})(?:\s*\\)?$")
_VIA = re.compile(r"^\s+#\s+(?:via\s+)?(\S.*)$")


@dataclass
class Entry:
    name: str  # canonical (PEP 503)
    version: str
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)  # who requires it: canonical names, or PYPROJECT_VIA


@dataclass
class Lock:
    entries: dict[str, Entry]
    frameworks: list[str]  # the pins it was resolved with, e.g. "torch==2.13.0"
    left_out: list[str]  # canonical names only the frameworks need


def _via_name(text: str) -> str | None:
    text = text.strip()
    if text == PYPROJECT_VIA:
        return text
    if not text or text == "via" or text.startswith("-"):  # "-c constraints.txt": not a package
        return None
    return canonicalize_name(text.split()[0])


def parse_lock(text: str) -> Lock:
    """The entries of a lock in pip's requirements format as uv writes it (`name==version \\`, hash lines,
    then `# via X` or `# via` with one `#   X` line per requirer), and the header lines this module adds."""
    entries: dict[str, Entry] = {}
    frameworks: list[str] = []
    left_out: list[str] = []
    entry: Entry | None = None
    for line in text.splitlines():
        if line.startswith(FRAMEWORKS_LINE):
            frameworks += line[len(FRAMEWORKS_LINE) :].split()
        elif line.startswith(LEFT_OUT_LINE):
            left_out += [canonicalize_name(n) for n in line[len(LEFT_OUT_LINE) :].replace(",", " ").split()]
        elif match := _ENTRY.match(line):
            entry = Entry(canonicalize_name(match[1]), match[2])
            entries[entry.name] = entry
        elif entry is not None and (match := _HASH.match(line)):
            entry.hashes.append(match[1])
        elif entry is not None and (match := _VIA.match(line)):
            name = _via_name(match[1])
            if name is not None:
                entry.via.append(name)
        elif line.strip() and not line.startswith("#"):
            entry = None  # a line of no entry: what follows it belongs to no entry either
    return Lock(entries, frameworks, left_out)


def kept(entries: dict[str, Entry], roots: set[str] | None = None) -> set[str]:
    """The entries reached from `roots` without passing through a framework, following requirer ->
    requirement edges read from the `via` lines. `roots`: pyproject.toml's requirements (canonical names);
    None takes the entries whose `via` names pyproject.toml, as uv's resolution says."""
    requires: dict[str, set[str]] = {}
    for entry in entries.values():
        for parent in entry.via:
            requires.setdefault(parent, set()).add(entry.name)
    todo = sorted(requires.get(PYPROJECT_VIA, set()) if roots is None else roots & set(entries))
    todo = [name for name in todo if name not in FRAMEWORKS]
    reached = set(todo)
    while todo:
        for child in requires.get(todo.pop(), ()):
            if child not in FRAMEWORKS and child not in reached:
                reached.add(child)
                todo.append(child)
    return reached


def render_entry(entry: Entry) -> str:
    lines = [f"{entry.name}=={entry.version} \\"]
    lines += [f"    --hash={h} \\" for h in entry.hashes]
    lines[-1] = lines[-1].removesuffix(" \\")
    if len(entry.via) == 1:
        lines.append(f"    # via {entry.via[0]}")
    else:
        lines += ["    # via", *(f"    #   {v}" for v in entry.via)]
    return "\n".join(lines)


def render_lock(resolved: dict[str, Entry], pins: list[str]) -> str:
    """The lock: the header, then the entries pyproject.toml reaches without a framework, by name."""
    keep = kept(resolved)
    left_out = sorted(set(resolved) - keep - FRAMEWORKS)
    header = [
        "# levelfield's dependencies from pyproject.toml's core and extras, except the frameworks: one version",
        "# each, with the SHA-256 of every file PyPI holds for it. `make setup` installs it with pip's",
        "# --require-hashes --no-deps, then the frameworks by version (Makefile, per ACCEL) and levelfield,",
        "# both constrained to these versions. Generated by `make lock` (levelfield/tools/lockfile.py,",
        f"# uv pip compile for CPython {PYTHON_VERSION} on {PYTHON_PLATFORM}, from PyPI); do not edit.",
        "# Resolved together with these framework pins, so the versions below are ones they accept:",
        FRAMEWORKS_LINE + " ".join(pins),
        "# Left out, needed only by the frameworks (they come with them, per ACCEL):",
        *(LEFT_OUT_LINE + line for line in textwrap.wrap(" ".join(left_out), 100)),
        "",
    ]
    return "\n".join(header + [render_entry(resolved[name]) for name in sorted(keep)]) + "\n"


def _applies(requirement: Requirement) -> bool:
    return requirement.marker is None or requirement.marker.evaluate(MARKER_ENVIRONMENT)


def pyproject_requirements(pyproject: dict) -> list[tuple[str, Requirement]]:
    """(where, requirement) of the core list and every extra, for the lock's platform; self-references
    (`levelfield[pytorch,...]`) left out."""
    project = pyproject["project"]
    found = [("dependencies", Requirement(text)) for text in project.get("dependencies", [])]
    for extra, texts in project.get("optional-dependencies", {}).items():
        found += [(f"extra {extra}", Requirement(text)) for text in texts]
    itself = canonicalize_name(project["name"])
    return [(where, r) for where, r in found if canonicalize_name(r.name) != itself and _applies(r)]


def lock_problems(pyproject: dict, lock_text: str, framework_pins: list[str] | None = None) -> list[str]:
    """Every way the lock and pyproject.toml (and the Makefile's framework pins, when given) disagree, one
    line each; [] when they agree."""
    lock = parse_lock(lock_text)
    problems = []
    pinned = {canonicalize_name(Requirement(p).name): Requirement(p) for p in lock.frameworks}
    if framework_pins is not None and sorted(lock.frameworks) != sorted(framework_pins):
        problems.append(
            f"requirements.lock: resolved with frameworks {' '.join(lock.frameworks) or '(none)'}, "
            f"expected the Makefile's {' '.join(framework_pins)} (run make lock)"
        )
    for where, requirement in pyproject_requirements(pyproject):
        name = canonicalize_name(requirement.name)
        if name in FRAMEWORKS:
            pin = pinned.get(name)
            if pin is None:
                problems.append(f"pyproject.toml {where}: framework {requirement} has no pin in the lock's header")
                continue
            version = next(iter(pin.specifier)).version
        elif name not in lock.entries:
            problems.append(f"pyproject.toml {where}: {requirement} is not in requirements.lock (run make lock)")
            continue
        else:
            version = lock.entries[name].version
        if not requirement.specifier.contains(Version(version), prereleases=True):
            problems.append(
                f"pyproject.toml {where}: {requirement} does not admit the locked {name}=={version} (run make lock)"
            )
    reached = kept(lock.entries, {canonicalize_name(r.name) for _, r in pyproject_requirements(pyproject)})
    for name, entry in sorted(lock.entries.items()):
        if name in FRAMEWORKS:
            problems.append(f"requirements.lock: {name}=={entry.version} is a framework; expected it out of the lock")
        elif name not in reached:
            problems.append(
                f"requirements.lock: {name}=={entry.version} is required by {', '.join(entry.via) or 'nothing'}, "
                "none of which pyproject.toml reaches without a framework (run make lock)"
            )
        if not entry.hashes:
            problems.append(f"requirements.lock: {name}=={entry.version} has no --hash (expected sha256 hashes)")
    return problems


def resolve(pins: list[str]) -> dict[str, Entry]:
    """pyproject.toml's core and every extra, with the framework pins, resolved by uv from PyPI for the lock's
    platform (network; uv from the dev extra)."""
    with tempfile.TemporaryDirectory() as tmp:
        constraints, out = Path(tmp) / "frameworks.txt", Path(tmp) / "resolved.txt"
        constraints.write_text("\n".join(pins) + "\n")
        command = [sys.executable, "-m", "uv", "pip", "compile", str(PYPROJECT), "--all-extras", "--generate-hashes"]
        command += ["--python-version", PYTHON_VERSION, "--python-platform", PYTHON_PLATFORM]
        command += ["--constraint", str(constraints), "--no-header", "--quiet", "--output-file", str(out)]
        subprocess.run(command, check=True, cwd=REPO)
        return parse_lock(out.read_text()).entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m levelfield.tools.lockfile",
        description="Refresh requirements.lock from pyproject.toml and the framework pins, or check that they "
        "agree. See docs/packaging.md, The lock file.",
        epilog="examples:\n"
        "  python -m levelfield.tools.lockfile --check\n"
        "  python -m levelfield.tools.lockfile --out requirements.lock --force torch==2.13.0 jax==0.10.2 "
        "tensorflow-cpu==2.21.0 onnxruntime==1.31.1\n"
        "  make lock          the same, with the Makefile's pins",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("pins", nargs="*", metavar="NAME==VERSION", help="the framework pins to resolve with")
    parser.add_argument("--out", type=Path, help="write the lock here")
    parser.add_argument("--force", action="store_true", help="replace --out when it exists")
    parser.add_argument("--check", action="store_true", help="check requirements.lock against pyproject.toml")
    args = parser.parse_args(argv)
    pyproject = tomllib.loads(PYPROJECT.read_text())
    if args.check:
        problems = lock_problems(pyproject, LOCK.read_text(), args.pins or None)
        print("\n".join(problems) or f"{LOCK.name} agrees with {PYPROJECT.name}", file=sys.stderr if problems else None)
        return 1 if problems else 0
    bad = [p for p in args.pins if canonicalize_name(Requirement(p).name) not in FRAMEWORKS or "==" not in p]
    if args.out is None or not args.pins or bad:
        parser.error(f"refreshing needs --out and NAME==VERSION pins of {', '.join(sorted(FRAMEWORKS))}; got {bad}")
    if args.out.exists() and not args.force:
        print(f"lockfile: {args.out}: already exists; pass --force to replace it", file=sys.stderr)
        return 2
    text = render_lock(resolve(args.pins), args.pins)
    problems = lock_problems(pyproject, text, args.pins)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    from levelfield.ground.fsutil import atomic_write_text

    atomic_write_text(args.out, text, overwrite=True)
    print(f"wrote {args.out}: {len(parse_lock(text).entries)} packages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
