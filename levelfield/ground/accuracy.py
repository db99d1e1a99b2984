"""Score LoadGen's mlperf_log_accuracy.json with the task's own metric (numpy only; the checker imports it).

    from levelfield.ground.accuracy import read_accuracy_log, score_accuracy_log, score_entries
    rows = read_accuracy_log(Path("out/mlperf_log_accuracy.json"), "ctr-dlrm", n=1024)  # float32 [1024]
    result = score_accuracy_log(path, task, labels)   # {"metric", "value", "reference_value", ...}
    result = score_entries(entries, task, labels)     # the same from an already parsed (bounded) log
                                                      # (a list of entry dicts, or accuracy_log.AccuracyEntries)
    result = score_entries(entries, task, None, precision="bf16")   # a task with a fidelity gate (rules 1.2)

The log is a JSON array of {"seq_id", "qsl_idx", "data"}: `data` is the hex of
the response bytes, which the runner makes the response row of sample
`qsl_idx` as the task declares it in `reference/<task>/common/model_spec.py`
(`RESPONSE_DTYPE`, `RESPONSE_SHAPE`, `to_response`): a class id, the digits of
a sequence, a score. Rows are put back in qsl_idx order and scored by
`reference/<task>/common/metric.py`, the code the trainer and the checker use,
so the number reported and the number re-scored cannot differ. A task whose
rules define a fidelity gate (rules 1.2's standard tasks) is scored instead by
its `common/fidelity.py` against the pinned reference outputs, at the
precision the run used (levelfield/ground/fidelity.py); it needs no labels.

The reader treats the file as hostile (a submission may hold anything): it
refuses files larger than a bound derived from n before reading them, and
raises ValueError naming the entry for anything that is not what LoadGen writes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from levelfield.ground import fidelity
from levelfield.ground.accuracy_log import AccuracyEntries, loadgen_layout
from levelfield.ground.registry import task_module

if TYPE_CHECKING:  # annotations only: the ground floor imports no stage
    from levelfield.rules.loader import Task

# LoadGen writes one entry per line: `{ "seq_id" : S, "qsl_idx" : I, "data" : "HEX" },`.
# With both integers at their 20-digit maximum that is this many characters besides the hex.
ENTRY_OVERHEAD_CHARS = len('{ "seq_id" : , "qsl_idx" : , "data" : "" },\n') + 2 * 20
# An accuracy run answers each sample once; the bound admits each sample answered twice
# (duplicates must repeat the same bytes) plus the brackets, and nothing larger.
MAX_ENTRIES_PER_SAMPLE = 2
FILE_SLACK_BYTES = 64
_HEX = re.compile(r"[0-9A-Fa-f]*")
DEFAULT_PRECISION = "fp32"  # a run that records none (trees before rules 1.2's inference precisions)


def response_spec(task_id_or_task: str | Task) -> ModuleType:
    """The task's common/model_spec module (RESPONSE_DTYPE, RESPONSE_SHAPE, to_response)."""
    return task_module(task_id_or_task, "model_spec")


def size_limit_bytes(row_bytes: int, n: int) -> int:
    """The largest accuracy log accepted for n samples of row_bytes bytes each."""
    return MAX_ENTRIES_PER_SAMPLE * n * (ENTRY_OVERHEAD_CHARS + 2 * row_bytes) + FILE_SLACK_BYTES


def _read_bounded(path: Path, limit_bytes: int) -> object:
    with path.open("rb") as f:
        data = f.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        raise ValueError(
            f"{path}: larger than {limit_bytes} bytes, the most an accuracy log of its samples can take; not reading it"
        )
    if (entries := loadgen_layout(data)) is not None:  # LoadGen's own layout, read as arrays
        return entries
    try:
        entries = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (invalid byte at offset {e.start})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply; expected an array of flat entries") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise ValueError(f"{path}: not usable JSON ({e})") from None
    return entries


def read_accuracy_log(path: Path, task_id_or_task: str | Task, n: int) -> np.ndarray:
    """Response rows [n, *RESPONSE_SHAPE] of the task's RESPONSE_DTYPE, by qsl_idx, from the file at `path`.

    ValueError (naming the file and the entry) when the file is larger than
    `size_limit_bytes` allows for n samples, or for anything `decode_entries` rejects.
    """
    path = Path(path)
    spec = response_spec(task_id_or_task)
    _check_n(n)
    entries = _read_bounded(path, size_limit_bytes(_row_bytes(spec), int(n)))
    return decode_entries(entries, task_id_or_task, n, source=str(path))


def _row_bytes(spec) -> int:
    return np.dtype(spec.RESPONSE_DTYPE).itemsize * int(np.prod(tuple(spec.RESPONSE_SHAPE), dtype=np.int64))


def _check_n(n) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n = {n!r}: expected the number of samples, a positive integer")


def decode_entries(entries: object, task_id_or_task: str | Task, n: int, *, source: str = "accuracy log") -> np.ndarray:
    """Response rows [n, *RESPONSE_SHAPE] from a parsed accuracy log (a list of entry dicts, or the
    AccuracyEntries accuracy_log.py reads LoadGen's layout into).

    ValueError (naming `source` and the entry) when `entries` is not a list of
    {"qsl_idx": int, "data": hex} objects, when `data` is not the hex of exactly
    one response row, when qsl_idx is outside [0, n), when a sample is answered
    twice with different bytes, or when one is missing.
    """
    spec = response_spec(task_id_or_task)
    _check_n(n)
    dtype, shape = np.dtype(spec.RESPONSE_DTYPE), tuple(spec.RESPONSE_SHAPE)
    row_bytes = _row_bytes(spec)
    if isinstance(entries, AccuracyEntries):
        rows = _rows_of_arrays(entries, n, row_bytes)
        if rows is not None:
            return np.frombuffer(rows.tobytes(), dtype=dtype).reshape((n,) + shape)
        entries = entries.as_json()  # something is wrong: the checks below find the first entry it is in
    if not isinstance(entries, list):
        raise ValueError(f"{source}: expected a JSON array of accuracy entries, found {type(entries).__name__}")
    row_hex: list[str | None] = [None] * n
    for position, entry in enumerate(entries):
        where = f"{source}: entry {position}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object {{seq_id, qsl_idx, data}}, found {type(entry).__name__}")
        index, data, seq = entry.get("qsl_idx"), entry.get("data"), entry.get("seq_id")
        if type(seq) is not int or seq < 0:  # LoadGen numbers every response; scoring does not read it
            raise ValueError(f"{where}: seq_id must be an integer >= 0, found {seq!r:.40}")
        if type(index) is not int:  # bool is an int subclass; 1.0 and "1" are not LoadGen's output
            raise ValueError(f"{where}: qsl_idx must be an integer, found {type(index).__name__}")
        if not 0 <= index < n:
            raise ValueError(f"{where}: qsl_idx {index} outside [0, {n})")
        if not isinstance(data, str) or not _HEX.fullmatch(data):
            raise ValueError(f"{where} (qsl_idx {index}): data must be a string of hex digits")
        if len(data) != 2 * row_bytes:
            raise ValueError(
                f"{where} (qsl_idx {index}): {len(data) // 2} bytes of data, expected {row_bytes} "
                f"({dtype.name} {list(shape)})"
            )
        data = data.upper()
        if row_hex[index] is None:
            row_hex[index] = data
        elif row_hex[index] != data:
            raise ValueError(f"{where}: qsl_idx {index} answered twice with different data")
    missing = [i for i, h in enumerate(row_hex) if h is None]
    if missing:
        raise ValueError(f"{source}: {len(missing)} of {n} samples have no entry (first: qsl_idx {missing[0]})")
    return np.frombuffer(bytes.fromhex("".join(row_hex)), dtype=dtype).reshape((n,) + shape)


def _rows_of_arrays(entries: AccuracyEntries, n: int, row_bytes: int) -> np.ndarray | None:
    """The response bytes [n, row_bytes] by qsl_idx when the entries pass every check of decode_entries
    (LoadGen's layout already gives integer ids >= 0 and hex data); None when any fails."""
    qsl, data = entries.qsl_idx, entries.data
    if data.shape[1] != row_bytes or not len(qsl) or qsl.min() < 0 or qsl.max() >= n:
        return None
    order = np.argsort(qsl, kind="stable")
    by_sample, rows = qsl[order], data[order]
    first = np.ones(len(by_sample), dtype=bool)  # the first entry of each sample, in file order
    first[1:] = by_sample[1:] != by_sample[:-1]
    if first.sum() != n:  # every id is in [0, n): n distinct ids are all of them
        return None
    # A sample answered twice must repeat its bytes: each entry against its sample's first entry.
    leader = np.maximum.accumulate(np.where(first, np.arange(len(first)), 0))
    if not (rows == rows[leader]).all():
        return None
    return rows[first]


def _score(rows: np.ndarray, task: Task, labels: np.ndarray | None, precision: str) -> dict:
    if fidelity.settings(task) is not None:
        return _score_fidelity(rows, task, precision)
    metric = task_module(task, "metric")
    value = float(metric.score(rows, labels))
    reference = float(task.inference["reference_value"])
    threshold = reference * float(task.inference["accuracy_ratio"])
    return {
        "metric": metric.NAME,
        "value": value,
        "reference_value": reference,
        "accuracy_ratio": float(task.inference["accuracy_ratio"]),
        "threshold": threshold,
        "pass": value >= threshold,
        "samples": len(labels),
    }


def _score_fidelity(rows: np.ndarray, task: Task, precision: str) -> dict:
    """Rules 1.2's gate of a standard task: agreement of the responses with the pinned reference outputs at
    the run's precision (levelfield/ground/fidelity.py), through the task's common/fidelity.py."""
    gate = fidelity.gate(task, precision)
    reference = fidelity.load_reference(task)
    value, items = task_module(task, "fidelity").agreement(rows, reference, gate["tolerance"])
    return {
        "metric": gate["metric"],
        "gate": "fidelity",
        "value": value,
        "precision": precision,
        "tolerance": gate["tolerance"],
        "threshold": gate["threshold"],
        "pass": value >= gate["threshold"],
        "samples": len(rows),
        "items": items,
        "reference_sha256": fidelity.settings(task)["reference"]["sha256"],
    }


def scored_samples(task: Task, labels: np.ndarray | None) -> int:
    """How many samples an accuracy log of `task` answers: the labels', or a fidelity task's gate set."""
    return task.inference_samples if labels is None else len(labels)


def score_accuracy_log(path: Path, task: Task, labels: np.ndarray | None, precision: str = DEFAULT_PRECISION) -> dict:
    """accuracy.json content: the task's metric over the logged responses, against the rules' threshold; for a
    task with a fidelity gate (labels None), the agreement with its reference outputs at `precision`."""
    return _score(read_accuracy_log(path, task, scored_samples(task, labels)), task, labels, precision)


def score_entries(
    entries: object,
    task: Task,
    labels: np.ndarray | None,
    *,
    source: str = "accuracy log",
    precision: str = DEFAULT_PRECISION,
) -> dict:
    """score_accuracy_log's result from a log the caller already read and parsed (with its own bound)."""
    return _score(decode_entries(entries, task, scored_samples(task, labels), source=source), task, labels, precision)
