"""Fidelity to the reference computation: rules 1.2's inference gate of the standard tasks (numpy only).

    from levelfield.ground.fidelity import gate, load_reference
    reference = load_reference(task)                  # the rules' reference outputs, SHA-256 checked
    settings = gate(task, "bf16")                     # {"metric", "tolerance", "threshold", ...} of the rules

A standard task has no trained model yet, so its accuracy run cannot be judged
by task accuracy. Rules 1.2 judge it instead by whether the implementation
computes what the model description says: the rules pin reference weights (a
deterministic numpy generator, `inference.fidelity.weights`, its output's
SHA-256) and the reference outputs of those weights on the first
`inference.fidelity.samples` eval rows, computed once in float64 by numpy
(`reference/<task>/common/fidelity_reference.py`, `levelfield fidelity
reference`), stored beside the task files and pinned by SHA-256. The accuracy
run of such a task loads those weights and is scored by its agreement with the
reference, for the precision it ran at (`levelfield infer --precision`):

- kind `classes` (images, the encoder's masked tokens): an item agrees when the
  predicted class has a float64 reference logit within the precision's
  `tolerance` of the reference's largest (the reference lists, per item, every
  class within `max_gap` of its top with that gap): a near-tie may fall either
  way at a finite precision, a wrong computation lands far away;
- kind `scores` (the recommender): a sample agrees when sigmoid(its logit) lies
  within `tolerance` of the reference probability.

The value is the share of agreeing items; it passes at the precision's
`threshold`. This is fidelity, not task accuracy: a correct implementation of
untrained weights passes it, a wrong one of any weights fails it.

The reference file is rules data read by the runner and the checker alike;
`load_reference` refuses one whose SHA-256 is not the rules', and anything not
shaped as `levelfield fidelity reference` writes it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from levelfield.ground.fsutil import read_text_limited

if TYPE_CHECKING:  # annotations only: the ground floor imports no stage
    from levelfield.rules.loader import Task

FORMAT = "levelfield-fidelity-reference-v1"
KINDS = ("classes", "scores")
READ_LIMIT_BYTES = 16 * 1024 * 1024  # the largest reference file (the encoder's masked tokens) is 0.9 MB


def settings(task: Task) -> dict | None:
    """The task's `inference.fidelity` section (rules 1.2's standard tasks), or None (a task-accuracy gate)."""
    return task.inference.get("fidelity")


def precisions(task: Task) -> list[str]:
    """The inference precisions the rules allow for `task`: `inference.precisions`, else its training one."""
    fixed = task.hyperparameters["fixed"].get("precision")
    tunable = task.hyperparameters["tunable"].get("precision", {})
    return list(task.inference.get("precisions") or [fixed or tunable.get("default", "fp32")])


def gate(task: Task, precision: str) -> dict:
    """{metric, kind, tolerance, threshold} of the rules' fidelity gate at `precision` (ValueError if none)."""
    fidelity = settings(task)
    if fidelity is None:
        raise ValueError(f"{task.id}: the rules define no fidelity gate (inference.fidelity)")
    if precision not in fidelity["threshold"]:
        raise ValueError(
            f"{task.id}: no fidelity threshold for precision {precision!r} "
            f"(the rules give {', '.join(fidelity['threshold'])})"
        )
    return {
        "metric": fidelity["metric"],
        "kind": fidelity["kind"],
        "tolerance": float(fidelity["tolerance"][precision]),
        "threshold": float(fidelity["threshold"][precision]),
    }


def weights_params(task: Task, generator: str) -> dict:
    """The task's inference.fidelity.weights, for the generator named `generator` (ValueError if the rules
    name another: a task's common/fidelity_reference.py runs only its own)."""
    params = task.inference["fidelity"]["weights"]
    if params["generator"] != generator:
        raise ValueError(f"{task.id}: weights generator {params['generator']!r} found / expected {generator!r}")
    return params


def reference_path(task: Task) -> Path:
    """The reference file of a task's rules: `inference.fidelity.reference.file`, relative to the version's folder."""
    return Path(task.path).parent.parent / settings(task)["reference"]["file"]


def load_reference(task: Task) -> dict:
    """The parsed reference outputs of `task`, after checking the file's SHA-256 against the rules; cached."""
    path = reference_path(task)
    text = read_text_limited(path, READ_LIMIT_BYTES)
    expected = settings(task)["reference"]["sha256"]
    found = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if found != expected:
        raise ValueError(f"{path}: SHA-256 {found} found / expected {expected} (rules {task.path.name})")
    return _parsed(text, str(path))


@functools.lru_cache(maxsize=8)
def _parsed(text: str, source: str) -> dict:
    data = json.loads(text)
    problems = []
    if data.get("format") != FORMAT:
        problems.append(f"format {data.get('format')!r} found / expected {FORMAT!r}")
    if data.get("kind") not in KINDS:
        problems.append(f"kind {data.get('kind')!r} found / expected one of {KINDS}")
    if problems:
        raise ValueError(f"{source}: {'; '.join(problems)}")
    if data["kind"] == "scores":
        data["scores_array"] = np.asarray(data["scores"], np.float64)
        return data
    items = np.asarray(data["items"], np.int64).reshape(-1, 2)
    data["items_array"] = items
    # Per item, the classes within max_gap of the reference's top and their gaps, padded with -1 / inf.
    width = max(len(c) for c in data["candidates"])
    classes = np.full((len(items), width), -1, np.int64)
    gaps = np.full((len(items), width), np.inf)
    for i, candidates in enumerate(data["candidates"]):
        for j, (cls, gap) in enumerate(candidates):
            classes[i, j], gaps[i, j] = cls, gap
    data["classes_array"], data["gaps_array"] = classes, gaps
    return data


def check_tolerance(reference: dict, tolerance: float, source: str = "fidelity gate") -> None:
    """A classes tolerance beyond the reference's max_gap cannot be judged: the reference lists no class past it."""
    if reference["kind"] == "classes" and not tolerance <= reference["max_gap"]:
        raise ValueError(
            f"{source}: tolerance {tolerance} found / expected <= the reference's max_gap {reference['max_gap']}"
        )


def class_agreement(reference: dict, predicted: np.ndarray, n: int, tolerance: float) -> tuple[float, int]:
    """(share of items of the first n samples whose predicted class is within `tolerance` of the reference's
    top, number of such items). `predicted`: int [items of samples < n], in the reference's item order."""
    check_tolerance(reference, tolerance)
    scored = reference["items_array"][:, 0] < n
    classes, gaps = reference["classes_array"][scored], reference["gaps_array"][scored]
    predicted = np.asarray(predicted, np.int64).reshape(-1)
    if len(predicted) != len(classes):
        raise ValueError(f"{len(predicted)} predictions for {len(classes)} reference items")
    accepted = (classes == predicted[:, None]) & (gaps <= tolerance)
    return float(np.mean(np.any(accepted, axis=1))) if len(classes) else math.nan, int(len(classes))


def items_of(reference: dict, n: int) -> np.ndarray:
    """int [items, 2]: (sample, position) of the reference's items among the first n samples."""
    items = reference["items_array"]
    return items[items[:, 0] < n]


def score_agreement(reference: dict, logits: np.ndarray, tolerance: float) -> tuple[float, int]:
    """(share of the first len(logits) samples whose sigmoid(logit) is within `tolerance` of the reference
    probability, that number of samples); a non-finite logit never agrees."""
    logits = np.asarray(logits, np.float64).reshape(-1)
    expected = reference["scores_array"][: len(logits)]
    if len(expected) != len(logits):
        raise ValueError(f"{len(logits)} scores for {len(expected)} reference samples")
    with np.errstate(over="ignore", invalid="ignore"):
        probability = 1.0 / (1.0 + np.exp(-logits))
    agree = np.isfinite(logits) & (np.abs(probability - expected) <= tolerance)
    return float(np.mean(agree)), int(len(logits))


def coarse(values: np.ndarray, bits: int = 16) -> np.ndarray:
    """float64 values rounded to `bits` significant bits, for the data-dependent numbers of a fidelity weights
    generator: another BLAS's last-bit differences vanish (a value would have to lie within ~1e-16 of a
    rounding boundary to change), and float32 holds them exactly, so the weights' SHA-256 holds anywhere."""
    mantissa, exponent = np.frexp(np.asarray(values, np.float64))
    return np.ldexp(np.round(mantissa * 2.0**bits) / 2.0**bits, exponent)


def variation_head(features: np.ndarray, classes: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(kernel float32 [F, classes], bias [classes]) reading `features` [n, F] of a calibration batch: each
    class's kernel a random combination of the n deviations from the batch mean, scaled so the class's logit
    has standard deviation 1 over the batch, the bias centring it (the image and encoder generators' heads)."""
    mean = features.mean(axis=0)
    deviations = features - mean
    kernel = deviations.T @ rng.standard_normal((len(features), classes))  # [F, classes]
    gain = 1.0 / np.maximum((deviations @ kernel).std(axis=0), 1e-12)
    kernel = coarse(kernel * gain)
    return kernel.astype(np.float32), coarse(-(mean @ kernel)).astype(np.float32)


def classes_within(logits: np.ndarray, max_gap: float, decimals: int) -> list[list[list[float]]]:
    """Per row of float64 logits [items, classes]: [[class, gap], ...] for every class whose gap to the row's
    largest logit, rounded to `decimals`, is at most max_gap; the top first (gap 0), then by gap.

    The rounded gap decides, not the exact one: the file is then a function of the numbers it states, and a
    file for a smaller max_gap is this one's rows cut at that gap (how rules 1.2's were made smaller)."""
    out = []
    top = logits.max(axis=1, keepdims=True)
    for row, best in zip(logits, top[:, 0], strict=True):
        near = np.flatnonzero(row >= best - max_gap - 10.0**-decimals)  # every class that may round to max_gap
        order = near[np.argsort(best - row[near], kind="stable")]
        rows = [[int(c), round(float(best - row[c]), decimals)] for c in order]
        out.append([pair for pair in rows if pair[1] <= max_gap])
    return out


def reference_text(document: dict) -> str:
    """The reference file's text: compact JSON, one item per line, so a diff shows which items changed."""
    head = {k: v for k, v in document.items() if k not in ("items", "candidates", "scores")}
    lines = ["{", *(f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items())]
    for key in ("items", "candidates", "scores"):
        if key in document:
            rows = [json.dumps(row, separators=(",", ":")) for row in document[key]]
            lines.append(f"  {json.dumps(key)}: [")
            lines += [f"    {row}," for row in rows[:-1]] + ([f"    {rows[-1]}"] if rows else [])
            lines.append("  ],")
    lines[-1] = lines[-1].rstrip(",")
    return "\n".join(lines) + "\n}\n"


def spread(logits: np.ndarray) -> dict:
    """How much float64 reference logits [items, classes] depend on the input: distinct top classes, the share
    of items the most frequent top class wins (1: a constant answer would agree everywhere), and the standard
    deviation over items of each class's logit, averaged over classes (0: the input does not matter)."""
    top = np.argmax(logits, axis=1)
    return {
        "distinct_top_classes": int(len(np.unique(top))),
        "items": int(len(logits)),
        "top_class_share": round(float(np.bincount(top).max() / len(top)), 4),
        "logit_std_over_inputs": round(float(np.mean(np.std(logits, axis=0))), 4),
    }
