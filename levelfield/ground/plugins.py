"""Implementations from other distributions: their entry points, read as metadata, and their code's digest.

    from levelfield.ground.plugins import GROUP, declarations, distribution_code, code_digest
    for d in declarations():            # entry_points.txt only: no plugin code is imported
        d.task, d.framework, d.distribution, d.version, d.value
    code = distribution_code("levelfield-numpy-example")   # its files (from RECORD) and their SHA-256
    code.record()                       # {"distribution", "version", "sha256"}: what runs record

An installed distribution registers its implementation of task T under a framework id F of its own with one
entry point in the group `levelfield.implementations`, named "T:F" and pointing at the class
(docs/plugins.md):

    [project.entry-points."levelfield.implementations"]
    "ctr-dlrm:numpy-example" = "levelfield_numpy_example.dlrm:NumpyDLRM"

This module reads what the distributions declare and never imports their code; the registry
(registry.py) loads a declared class only when its row is asked for, and holds it to the interface
(reference/interface.py, `plugin_problems`).

A plugin's code digest is the SHA-256 of a sha256sum-format listing ("<sha256>  <path>\\n" per file, sorted
by path) of the distribution's own files: the files its RECORD lists inside the installation folder, hashed
from disk, less those the installer writes (RECORD, INSTALLER, REQUESTED, direct_url.json, compiled
__pycache__ files) and those installed elsewhere (scripts). The same wheel installed anywhere, by any
installer, has the same digest, and the checker recomputes it from the copies that `levelfield package`
puts under code/plugins/<distribution>/ (`code_digest`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from levelfield.ground.errors import UserError
from levelfield.ground.fsutil import sha256_file

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUP = "levelfield.implementations"
# Task and framework ids become folder names of a submission tree: lower-case words joined by hyphens.
ID_PATTERN = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
# Files the installer writes into a distribution's .dist-info folder (not the wheel's): they differ between
# installs of the same wheel (direct_url.json names the folder it came from), so the digest leaves them out.
INSTALLER_FILES = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")


@dataclass(frozen=True)
class Declaration:
    """One entry point of the group: "<task>:<framework> = <module>:<class>" of one distribution."""

    name: str  # the entry point's name, "<task>:<framework>"
    value: str  # "<module>:<class>"
    distribution: str
    version: str
    task: str | None  # None: the name is not "<task>:<framework>" (`problem` says so)
    framework: str | None
    entry_point: EntryPoint | None = field(default=None, compare=False, repr=False)

    @property
    def where(self) -> str:
        """How a message names it: the distribution, its version and the entry point."""
        return f"plugin {self.distribution} {self.version} (entry point '{self.name} = {self.value}')"

    @property
    def problem(self) -> str | None:
        if self.task is None:
            return (
                f"{self.where}: its name is not '<task>:<framework>' with ids of lower-case words joined by "
                f"hyphens (expected e.g. 'ctr-dlrm:numpy-example')"
            )
        return None


def declarations() -> list[Declaration]:
    """Every entry point of GROUP in the installed distributions, in a stable order; nothing is imported."""
    from importlib.metadata import entry_points

    found = []
    for entry_point in entry_points(group=GROUP):
        dist = entry_point.dist
        distribution = (dist.metadata["Name"] if dist is not None else None) or "an unnamed distribution"
        version = (dist.version if dist is not None else None) or "(no version)"
        task, sep, framework = entry_point.name.partition(":")
        named = bool(sep) and ID_PATTERN.fullmatch(task) is not None and ID_PATTERN.fullmatch(framework) is not None
        found.append(
            Declaration(
                entry_point.name,
                entry_point.value,
                distribution,
                version,
                task if named else None,
                framework if named else None,
                entry_point,
            )
        )
    return sorted(found, key=lambda d: (d.name, d.distribution))


def code_digest(file_sha256: dict[str, str]) -> str:
    """SHA-256 of the listing "<sha256>  <path>\\n" of every file, sorted by path (the MANIFEST's format)."""
    listing = "".join(f"{digest}  {path}\n" for path, digest in sorted(file_sha256.items()))
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class DistributionCode:
    """An installed distribution's own files and their digest."""

    distribution: str
    version: str
    files: dict[str, Path]  # the path RECORD names (relative to the installation folder, "/") -> the file
    sha256: str
    editable: bool  # installed with `pip install -e`: its files are a pointer to a source folder, not its code

    def record(self) -> dict:
        """What a run records of the plugin it ran (environment.json's `plugin`, rules/schemas/)."""
        return {"distribution": self.distribution, "version": self.version, "sha256": self.sha256}


def _own_file(path: PurePosixPath) -> bool:
    """Whether RECORD's `path` is one of the wheel's files inside the installation folder."""
    if ".." in path.parts or path.is_absolute():
        return False  # a script or data file installed beside the interpreter, not in the installation folder
    if "__pycache__" in path.parts or path.suffix == ".pyc":
        return False  # compiled by the installer, byte-for-byte this interpreter's
    return not (path.parent.name.endswith(".dist-info") and path.name in INSTALLER_FILES)


@functools.cache
def distribution_code(name: str) -> DistributionCode | None:
    """The installed distribution `name`'s files and digest; None when it is not installed. UserError when its
    RECORD is missing or lists a file that is not there (a broken installation)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(name)
    except PackageNotFoundError:
        return None
    listed = dist.files
    if listed is None:
        raise UserError(
            f"plugin {name} {dist.version}: no RECORD in its .dist-info (expected the list of its installed files)",
            hint=f"reinstall it: pip install --force-reinstall {name}",
        )
    files = {}
    for entry in listed:
        path = PurePosixPath(str(entry))
        if _own_file(path):
            files[path.as_posix()] = Path(dist.locate_file(entry))
    missing = sorted(rel for rel, file in files.items() if not file.is_file())
    if missing:
        raise UserError(
            f"plugin {name} {dist.version}: its RECORD lists {missing[0]}, which is not installed "
            f"({len(missing)} listed file(s) missing)",
            hint=f"reinstall it: pip install --force-reinstall {name}",
        )
    digest = code_digest({rel: sha256_file(file) for rel, file in files.items()})
    return DistributionCode(dist.metadata["Name"] or name, dist.version, files, digest, _editable(dist))


def _editable(dist) -> bool:
    """Whether the installer recorded an editable install (PEP 610's direct_url.json, dir_info.editable)."""
    text = dist.read_text("direct_url.json")
    if not text:
        return False
    try:
        info = json.loads(text)
    except ValueError:
        return False
    dir_info = info.get("dir_info") if isinstance(info, dict) else None
    return isinstance(dir_info, dict) and dir_info.get("editable") is True
