"""Submission trees for the checker benchmark, made from an existing one (submissions/example).

    tree = ScaledTree(Path("submissions/example"), tmp / "big")
    tree.grow(96)              # the example's results under 96 system ids, MANIFEST resealed
    tree.results, tree.files
    training_only(Path("submissions/example"), tmp / "trn")   # the example without its inference runs

A copy of the source's one system description and its results is filed under
a new system id (`<system>-0001`, ...); nothing inside the files names the
system folder, so every copy is as valid as the original and the tree stays
clean. Files are hard links to the source where the file system allows (one
inode, no bytes copied: growing to thousands of results takes a second),
plain copies otherwise. The MANIFEST is rewritten as `levelfield package`
writes it: `<sha256>  <path>` per file, sorted; digests are computed once per
source file, since every copy has the same bytes.

A "result" here is one training run log (`training/result_<i>.txt`) or one
inference run folder (`<scenario>/<mode>/`), the units the checker judges.

    round = InferenceRound(corpus / "inference_results_v4.1", tmp / "inference_results_v4.1")
    round.grow(200)            # every submitter folder 200 times: closed/Lenovo, closed/Lenovo-0001, ...
    round.results, round.files

An MLCommons Inference round of thousands of results, made the same way from
the published corpus: each submitter folder (results, compliance tests,
measurements, systems) filed again under a new submitter name, hard links
again. A result there is one results/<system>/<model>/<Scenario>/ folder, the
unit `levelfield check` scores. The checker keeps no cache keyed by a file's
content, so a copy costs what a different file of the same size would.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from levelfield.ground import layout as L


def _files(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink() and p.name != L.MANIFEST
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def count_results(paths: list[str]) -> int:
    """Training logs plus inference run folders among these tree paths."""
    logs = sum(1 for p in paths if p.split("/")[-2:-1] == [L.TRAINING] and L.TRAINING_LOG.match(p.rsplit("/", 1)[-1]))
    runs = {p.rsplit("/", 1)[0] for p in paths if p.split("/")[-2] in L.MODES}
    return logs + len(runs)


class ScaledTree:
    def __init__(self, source: Path, root: Path):
        self.source, self.root = Path(source), Path(root)
        self.paths = _files(self.source)
        self.digests = {p: _sha256(self.source / p) for p in self.paths}
        systems = sorted({p.split("/")[3] for p in self.paths if p.split("/")[2:3] == [L.RESULTS]})
        if len(systems) != 1:
            raise ValueError(f"{self.source}: expected results of one system to replicate, found {systems}")
        self.system = systems[0]
        self.copies = 0
        self.linked = True  # False once any file had to be copied
        self.manifest: list[str] = []
        for path in self.paths:
            if f"/{L.SYSTEMS}/" not in path and f"/{L.RESULTS}/" not in path:  # the code reference, once
                self._place(path, path)

    def _renamed(self, path: str, system: str) -> str | None:
        """`path` filed under `system`, or None when the path is not a system's (e.g. code/)."""
        parts = path.split("/")
        if parts[2:4] == [L.SYSTEMS, L.system_file(self.system)]:
            return "/".join(parts[:3] + [L.system_file(system)])
        if parts[2:4] == [L.RESULTS, self.system]:
            return "/".join(parts[:3] + [system] + parts[4:])
        return None

    def _place(self, source_path: str, path: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(self.source / source_path, target)
        except OSError:  # another file system, or links not allowed: copy the bytes
            shutil.copyfile(self.source / source_path, target)
            self.linked = False
        self.manifest.append(f"{self.digests[source_path]}  {path}\n")

    def grow(self, copies: int) -> None:
        """Add system copies until there are `copies` (the first keeps the source's id); reseal MANIFEST."""
        for index in range(self.copies, copies):
            system = self.system if index == 0 else f"{self.system}-{index:04d}"
            for path in self.paths:
                renamed = self._renamed(path, system)
                if renamed is not None:
                    self._place(path, renamed)
        self.copies = max(self.copies, copies)
        (self.root / L.MANIFEST).write_text(
            "".join(sorted(self.manifest, key=lambda line: line[66:])), encoding="utf-8"
        )

    @property
    def files(self) -> int:
        return len(self.manifest) + 1  # and the MANIFEST itself

    @property
    def results(self) -> int:
        return count_results([line[66:].rstrip("\n") for line in self.manifest])


def training_only(source: Path, root: Path) -> list[str]:
    """A copy of `source` without inference runs (training logs, environments, systems, code); its log paths."""
    source, root = Path(source), Path(root)
    kept = [p for p in _files(source) if not any(part in L.MODES for part in p.split("/"))]
    lines = []
    for path in kept:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / path, root / path)
        lines.append(f"{_sha256(root / path)}  {path}\n")
    (root / L.MANIFEST).write_text("".join(lines), encoding="utf-8")
    return [p for p in kept if p.split("/")[-2] == L.TRAINING]


class InferenceRound:
    """Copies of an MLCommons Inference tree's submitter folders (<division>/<submitter>/), hard-linked."""

    def __init__(self, source: Path, root: Path):
        self.source, self.root = Path(source), Path(root)
        self.submitters = sorted(p.relative_to(self.source) for p in self.source.glob("*/*") if p.is_dir())
        self.paths = {
            s: sorted(p.relative_to(self.source / s) for p in (self.source / s).rglob("*") if p.is_file())
            for s in self.submitters
        }
        self.copies = 0
        self.files = 0
        self.results = 0
        self.linked = True

    def grow(self, copies: int) -> None:
        """Add copies of every submitter folder until there are `copies` of each (the first keeps its name)."""
        for index in range(self.copies, copies):
            for submitter in self.submitters:
                name = submitter if index == 0 else submitter.with_name(f"{submitter.name}-{index:04d}")
                for path in self.paths[submitter]:
                    target = self.root / name / path
                    target.parent.mkdir(parents=True, exist_ok=True)
                    try:
                        os.link(self.source / submitter / path, target)
                    except OSError:  # another file system: copy the bytes
                        shutil.copyfile(self.source / submitter / path, target)
                        self.linked = False
                    self.files += 1
                self.results += len(
                    {p.parts[:4] for p in self.paths[submitter] if p.parts[0] == "results" and len(p.parts) > 4}
                )
        self.copies = max(self.copies, copies)
