"""Typed records of a loaded submission: what the checks see instead of files.

Every record carries the relative path of the file or folder it came from, so
a finding can point at it. Values are as parsed (untrusted): a check must not
assume a type it has not tested.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from levelfield.ground.parse import MllogFile
from levelfield.ground.submission.tree import Tree


@dataclass
class JsonFile:
    path: str
    data: Any = None  # None when unreadable; see the loader's malformed list


@dataclass
class SystemRecord:
    id: str
    path: str
    data: Any = None


@dataclass
class TrainingResult:
    """The logs of one training/ folder (time to train), or of one throughput/ folder (rules 1.2: a
    training-throughput result, one log per repeat; kind "throughput")."""

    system: str
    task: str
    framework: str
    folder: str
    logs: list[MllogFile] = field(default_factory=list)
    kind: str = "training"  # "training" | "throughput": the folder's name (levelfield/ground/layout.py)


# The InferenceRun attribute holding each file directly in a <scenario>/<mode>/ folder.
RUN_FILE_ATTRIBUTE = {
    "mlperf_log_detail.txt": "detail",
    "mlperf_log_summary.txt": "summary",
    "result.json": "result",
    "settings.json": "settings",
    "accuracy.json": "accuracy",
    "mlperf_log_accuracy.json.gz": "accuracy_log",
}
# The Repeat attribute holding each file of a performance repeat's run_<i>/ folder.
REPEAT_FILE_ATTRIBUTE = {"mlperf_log_detail.txt": "detail", "mlperf_log_summary.txt": "summary"}


@dataclass
class Repeat:
    """One LoadGen run's logs: a performance repeat (its run_<i>/ folder), or an accuracy run (index None,
    the logs flat in its folder)."""

    index: int | None
    folder: str
    detail: MllogFile | None = None
    summary: str | None = None

    @property
    def summary_path(self) -> str:
        return f"{self.folder}/mlperf_log_summary.txt"

    @property
    def detail_path(self) -> str:
        return f"{self.folder}/mlperf_log_detail.txt"


@dataclass
class InferenceRun:
    system: str
    task: str
    framework: str
    scenario: str
    mode: str
    folder: str  # .../<scenario>/<mode>
    detail: MllogFile | None = None  # accuracy mode: LoadGen's logs, flat in the folder
    summary: str | None = None
    result: JsonFile | None = None
    settings: JsonFile | None = None
    accuracy: JsonFile | None = None
    # The parsed JSON array of {seq_id, qsl_idx, data}; in LoadGen's own layout, the same as arrays
    # (ground/accuracy_log.py AccuracyEntries), which accuracy scoring reads alike.
    accuracy_log: JsonFile | None = None
    repeats: list[Repeat] = field(default_factory=list)  # performance mode: run_<i>/ folders, by index

    @property
    def key(self) -> tuple:
        return (self.system, self.task, self.framework, self.scenario)

    def loadgen_runs(self) -> list[Repeat]:
        """Every LoadGen run of the folder: the repeats of a performance run, the one run of an accuracy run."""
        if self.mode == "performance":
            return self.repeats
        return [Repeat(None, self.folder, self.detail, self.summary)]

    def repeat(self, index: int) -> Repeat | None:
        return next((r for r in self.repeats if r.index == index), None)


@dataclass
class ManifestEntry:
    lineno: int
    sha256: str
    path: str


@dataclass
class Submission:
    root: Path
    tree: Tree
    division: str | None = None
    org: str | None = None
    base: str = ""  # "<division>/<org>"
    systems: dict[str, SystemRecord] = field(default_factory=dict)
    trainings: list[TrainingResult] = field(default_factory=list)
    throughputs: list[TrainingResult] = field(default_factory=list)  # rules 1.2 training-throughput results
    inferences: list[InferenceRun] = field(default_factory=list)
    environments: dict[tuple, JsonFile] = field(default_factory=dict)  # (system, task, framework) -> file
    code_ref: JsonFile | None = None
    plugins: JsonFile | None = None  # code/plugins.json: the plugins the results ran (docs/plugins.md)
    # code/plugins/<distribution>/<path>: distribution -> {path as its RECORD names it: path in the tree}
    plugin_files: dict[str, dict[str, str]] = field(default_factory=dict)
    # Framework ids code/plugins.json declares, which results may use where the rules admit plugins.
    plugin_frameworks: dict[str, str] = field(default_factory=dict)  # framework -> distribution
    manifest: list[ManifestEntry] | None = None  # None: no MANIFEST file
    # What the loader could not place or read, for the structure checks to report.
    unknown: list[tuple[str, str]] = field(default_factory=list)  # (path, why it is not expected)
    unknown_ids: list[tuple[str, str]] = field(default_factory=list)  # (path, which id the rules lack)
    missing: list[tuple[str, str]] = field(default_factory=list)  # (path, what should be there)
    malformed: list[tuple[str, int | None, str]] = field(default_factory=list)  # (path, line, why)
    misshapen: list[tuple[str, int | None, str]] = field(default_factory=list)  # parsed, breaks its schema

    def path(self, *parts: str) -> str:
        return "/".join([self.base, *parts]) if self.base else "/".join(parts)

    def result_keys(self) -> set[tuple]:
        """(system, task, framework) of every result present, training or inference."""
        keys = {(t.system, t.task, t.framework) for t in (*self.trainings, *self.throughputs)}
        return keys | {(r.system, r.task, r.framework) for r in self.inferences}
