"""Score LoadGen's mlperf_log_accuracy.json with the task's own metric (numpy only; the checker imports it).

    from levelfield.reference.harness.accuracy import read_accuracy_log, score_accuracy_log
    outputs = read_accuracy_log(Path("out/mlperf_log_accuracy.json"), "ctr-dlrm", n=1024)  # float32 [n]
    result = score_accuracy_log(path, task, labels)   # {"metric", "value", "reference_value", ...}

The log is a JSON array of {"seq_id", "qsl_idx", "data"}: `data` is the hex of
the response bytes, which the runner makes the float32 output row of sample
`qsl_idx`. Rows are put back in qsl_idx order and scored by
`reference/<task>/common/metric.py`, the code the trainer and the checker use,
so the number reported and the number re-scored cannot differ.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np

# Shape of one sample's output row (float32) per task, as each task's predict returns it:
# fmnist 10 logits, seq 12 positions x 10 digit logits, ctr one logit.
OUTPUT_ROW_SHAPE = {"fmnist-resnet": (10,), "seq-transformer": (12, 10), "ctr-dlrm": ()}


def read_accuracy_log(path: Path, task_id: str, n: int) -> np.ndarray:
    """float32 [n, *row shape] outputs by qsl_idx; ValueError when a sample is missing, repeated or malformed."""
    shape = OUTPUT_ROW_SHAPE[task_id]
    row_bytes = 4 * int(np.prod(shape, dtype=np.int64))
    entries = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a JSON array of accuracy entries")
    outputs = np.full((n,) + shape, np.nan, dtype=np.float32)
    seen = np.zeros(n, dtype=bool)
    for entry in entries:
        index = int(entry["qsl_idx"])
        data = bytes.fromhex(entry["data"])
        if not 0 <= index < n:
            raise ValueError(f"{path}: seq_id {entry.get('seq_id')}: qsl_idx {index} outside [0, {n})")
        if len(data) != row_bytes:
            raise ValueError(f"{path}: seq_id {entry.get('seq_id')}: {len(data)} bytes, expected {row_bytes} "
                             f"(float32 {list(shape)})")
        if seen[index]:
            continue  # LoadGen may answer a sample more than once; the runner answers each with the same row
        outputs[index] = np.frombuffer(data, dtype="<f4").reshape(shape)
        seen[index] = True
    missing = int((~seen).sum())
    if missing:
        raise ValueError(f"{path}: {missing} of {n} samples have no entry (first: {int(np.argmin(seen))})")
    return outputs


def score_accuracy_log(path: Path, task, labels: np.ndarray) -> dict:
    """accuracy.json content: the task's metric over the logged outputs, against the rules' threshold."""
    metric = importlib.import_module(f"levelfield.reference.{task.package}.common.metric")
    outputs = read_accuracy_log(path, task.id, len(labels))
    value = float(metric.score(outputs, labels))
    reference = float(task.inference["reference_value"])
    threshold = reference * float(task.inference["accuracy_ratio"])
    return {"metric": metric.NAME, "value": value, "reference_value": reference,
            "accuracy_ratio": float(task.inference["accuracy_ratio"]), "threshold": threshold,
            "pass": value >= threshold, "samples": len(labels)}
