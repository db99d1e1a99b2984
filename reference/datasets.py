"""Every task's dataset behind one call, numpy only, checked against the SHA-256 in the rules.

    from levelfield.rules import load_suite
    from levelfield.reference.datasets import load_dataset, verify_dataset
    task = load_suite().task("fmnist-resnet")
    arrays = load_dataset(task)              # {"train_images": uint8 (60000, 28, 28), ...}
    report = verify_dataset(task)            # what was checked, expected / actual digests
    arrays, report = load_verified(task)     # both, a generated dataset generated once (raises when bad)
    print(report.ok)

or from a shell: `levelfield data verify`.

Two kinds of dataset (`dataset.kind` in the task's rules file):

- `idx-files`: files on disk (Fashion-MNIST); the rules pin each file's SHA-256,
  checked before a byte is parsed. Reader: `fmnist_resnet/common/dataset.py`.
- `generated`: arrays computed from `generator` and `params`; the rules pin
  `arrays_digest` of the result. Generators: `<task>/common/dataset.py`.

Keys of the returned dict are the rules' file / array names. Task modules are
imported lazily, so importing this module costs nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from levelfield.ground.errors import UserError
from levelfield.ground.registry import task_module
from levelfield.reference import dataset_cache
from levelfield.rules.loader import Task, display_path

# dataset kind -> the task whose common/dataset.py reads it (`load(task, data_dir)`, `verify(task, data_dir)`).
_FILE_READERS = {"idx-files": "fmnist-resnet"}
# generator name -> the task whose common/dataset.py `generate(params) -> dict[str, np.ndarray]` builds it.
_GENERATORS = {
    "sort-digits-v1": "seq-transformer",
    "ctr-synthetic-v1": "ctr-dlrm",
    "markov-mlm-v1": "seq-transformer-standard",
    "plaid-images-v1": "image-resnet50-standard",
}


# The two splits every task's arrays are named by (`train_*`, `eval_*`).
SPLITS = ("train", "eval")


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


@dataclass(frozen=True)
class DigestCheck:
    """One SHA-256 comparison: `what` is a file path or a description of generated arrays."""

    what: str
    expected: str
    actual: str
    label: str = ""  # short name for tables: the file name, or "N arrays"

    @property
    def ok(self) -> bool:
        return self.expected == self.actual

    def problem(self) -> str:
        return f"{self.what}: SHA-256 mismatch (found {self.actual}, expected {self.expected})"


@dataclass(frozen=True)
class DatasetReport:
    """What `verify_dataset` checked for one task, and how to fix a mismatch."""

    task_id: str
    dataset: str  # the dataset's name in the rules, e.g. fashion-mnist
    kind: str  # idx-files | generated
    source: str  # the data folder read, or the generator name
    checks: tuple[DigestCheck, ...]
    hint: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def problems(self) -> list[str]:
        return [c.problem() for c in self.checks if not c.ok]

    def raise_if_bad(self) -> None:
        if not self.ok:
            raise UserError("\n".join(self.problems()), hint=self.hint)


def arrays_digest(arrays: dict[str, np.ndarray], order: list[str]) -> str:
    """Hex SHA-256 of named arrays, independent of machine byte order and memory layout.

    Byte layout hashed, for each name in `order` (the rules' `arrays` order):

        name            UTF-8, then b"\\n"
        dtype           numpy's explicit little-endian type string ('<f4', '<i4', '|u1'), then b"\\n"
        shape           decimal dimensions joined by ",", e.g. "65536,12", then b"\\n"
        payload         the values in C (row-major) order as little-endian bytes,
                        exactly prod(shape) * itemsize bytes

    The payload length follows from dtype and shape, so the concatenation is
    unambiguous; names, dtypes and shapes are hashed so that a reshaped or
    re-typed array with the same bytes still changes the digest.
    """
    h = hashlib.sha256()
    for name in order:
        array = np.asarray(arrays[name])
        if array.dtype.kind not in "biuf":
            raise ValueError(f"{name}: cannot digest dtype {array.dtype} (numeric arrays only)")
        little = array.dtype.newbyteorder("<")  # '|u1' stays '|u1'
        shape = ",".join(str(d) for d in array.shape)
        h.update(f"{name}\n{little.str}\n{shape}\n".encode())
        h.update(np.ascontiguousarray(array, dtype=little).tobytes(order="C"))
    return h.hexdigest()


def _rules_file(task) -> str:
    path = getattr(task, "path", None)
    return display_path(path) if path is not None else f"task {task.id}"


def _module_for(task):
    spec = task.dataset
    if spec["kind"] == "generated":
        name = _GENERATORS.get(spec["generator"])
        if name is None:
            raise UserError(
                f"{_rules_file(task)}: $.dataset.generator: unknown generator {spec['generator']!r} "
                f"(expected one of: {', '.join(_GENERATORS)})"
            )
    else:
        name = _FILE_READERS.get(spec["kind"])
        if name is None:
            raise UserError(
                f"{_rules_file(task)}: $.dataset.kind: unknown dataset kind {spec['kind']!r} "
                f"(expected one of: generated, {', '.join(_FILE_READERS)})"
            )
    return task_module(name, "dataset")


def generate_arrays(task: Task) -> dict[str, np.ndarray]:
    """Run a `generated` task's generator and check names, shapes and dtypes against the rules."""
    spec = task.dataset
    try:
        arrays = _module_for(task).generate(spec["params"])
    except ValueError as e:  # a generator's complaint about its params
        raise UserError(f"{_rules_file(task)}: $.dataset.params: {e}") from None
    if list(arrays) != list(spec["arrays"]):
        raise UserError(
            f"{_rules_file(task)}: $.dataset.arrays: generator {spec['generator']} makes "
            f"{', '.join(arrays)}; rules list {', '.join(spec['arrays'])}"
        )
    for name, want in spec["arrays"].items():
        got = arrays[name]
        if list(got.shape) != list(want["shape"]) or got.dtype != np.dtype(want["dtype"]):
            raise UserError(
                f"{_rules_file(task)}: $.dataset.arrays.{name}: generated {got.dtype} "
                f"{list(got.shape)}, rules expect {want['dtype']} {list(want['shape'])}"
            )
    return arrays


def _arrays_label(spec: dict) -> str:
    return f"{len(spec['arrays'])} arrays"


def expected_digests(task: Task) -> dict[str, str]:
    """{label: SHA-256} the rules pin, keyed as the trainer logs `levelfield_dataset_digest`."""
    spec = task.dataset
    if spec["kind"] == "generated":
        return {_arrays_label(spec): spec["sha256"]}
    return {entry["file"]: entry["sha256"] for entry in spec["files"].values()}


def _generated_report(task, arrays: dict[str, np.ndarray]) -> DatasetReport:
    spec = task.dataset
    check = DigestCheck(
        what=f"{spec['generator']} arrays ({', '.join(spec['arrays'])})",
        expected=spec["sha256"],
        actual=arrays_digest(arrays, list(spec["arrays"])),
        label=_arrays_label(spec),
    )
    hint = (
        f"the generator or its params changed; if on purpose, give the generator a new name and pin the "
        f"new digest in {_rules_file(task)} ($.dataset.sha256)"
    )
    return DatasetReport(task.id, spec["name"], "generated", spec["generator"], (check,), hint)


def _generated_checked(task: Task) -> tuple[dict[str, np.ndarray], DatasetReport]:
    """A generated dataset and its digest check: from the on-disk cache when it holds arrays with the
    rules' digest (reference/dataset_cache.py), else from the generator (then cached when they match)."""
    cached = dataset_cache.read(task.dataset)
    if cached is not None:
        report = _generated_report(task, cached)
        if report.ok:
            return cached, report
        dataset_cache.discard(task.dataset)  # damaged on disk: made again below
    arrays = generate_arrays(task)
    report = _generated_report(task, arrays)
    if report.ok:
        dataset_cache.write(task.dataset, arrays)
    return arrays, report


def load_dataset(task: Task, data_dir: str | None = None) -> dict[str, np.ndarray]:
    """The task's arrays by rules name, after checking them against the rules' SHA-256.

    `data_dir` applies to file datasets only (search order there: `data_dir`,
    then $LEVELFIELD_DATA_DIR, then the rules' `default_dir`).
    """
    if task.dataset["kind"] == "generated":
        arrays, report = _generated_checked(task)
        report.raise_if_bad()
        return arrays
    return _module_for(task).load(task, data_dir)


def load_verified(task: Task, data_dir: str | None = None) -> tuple[dict[str, np.ndarray], DatasetReport]:
    """The task's arrays and the report of their check, raised when bad (the trainer logs what it read).

    A generated dataset is generated once (and kept on disk for the next process: dataset_cache.py):
    verifying and then loading it generated and hashed ctr-dlrm-standard's 2^20 rows twice, seconds of
    every run's init on a CPU."""
    if task.dataset["kind"] == "generated":
        arrays, report = _generated_checked(task)
        report.raise_if_bad()
        return arrays, report
    report = verify_dataset(task, data_dir)
    report.raise_if_bad()
    return load_dataset(task, data_dir), report


def verify_dataset(task: Task, data_dir: str | None = None) -> DatasetReport:
    """Check the task's data against the rules; mismatches are reported, not raised. A generated dataset is
    generated afresh (never read from the cache): what is checked is that the generator still makes it.

    A missing data folder or file raises `UserError` (there is nothing to compare).
    """
    if task.dataset["kind"] == "generated":
        return _generated_report(task, generate_arrays(task))
    return _module_for(task).verify(task, data_dir)
