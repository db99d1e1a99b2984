"""The pinned reference weights of a task's fidelity gate (rules 1.2), behind one call, numpy only.

    from levelfield.reference.fidelity_weights import load_fidelity_weights, weights_digest
    weights = load_fidelity_weights(task)    # generated once per machine, then read from the cache
    weights_digest(task, weights)            # the SHA-256 the rules pin (inference.fidelity.weights.sha256)

A standard task's fidelity gate (levelfield/ground/fidelity.py) judges an
accuracy run against reference outputs of weights that no file in the
repository holds: the task's `common/fidelity_reference.py` generates them
(`generate(task)`: a seeded draw and a float64 calibration on training rows,
seconds to a minute), and the rules pin the SHA-256 of the result, computed as
a dataset's (reference/datasets.py `arrays_digest`, in the model's
parameter_shapes order). Generated weights are kept in the dataset cache
(reference/dataset_cache.py, a folder named by the generator and that digest)
and checked against the digest whenever they are loaded, fresh or cached;
a mismatch is an error naming both digests, never a silent use of other weights.
"""

from __future__ import annotations

import numpy as np

from levelfield.ground.errors import UserError
from levelfield.ground.registry import task_module
from levelfield.reference import dataset_cache
from levelfield.reference.datasets import arrays_digest
from levelfield.rules.loader import Task, display_path


def parameter_order(task: Task) -> list[str]:
    """The neutral weight names in the order the digest hashes them (the model spec's parameter_shapes)."""
    return list(task_module(task, "model_spec").SPEC.parameter_shapes)


def weights_digest(task: Task, weights: dict[str, np.ndarray]) -> str:
    return arrays_digest(weights, parameter_order(task))


def label(task: Task) -> str:
    """How result.json names these weights, e.g. fidelity(resnet50-fidelity-v1, seed=20261201) (`levelfield
    reproduce` knows the form: generated again, not asked for)."""
    params = task.inference["fidelity"]["weights"]
    return f"fidelity({params['generator']}, seed={params['seed']})"


def _cache_spec(task: Task) -> dict:
    params = task.inference["fidelity"]["weights"]
    return {"generator": params["generator"], "sha256": params["sha256"], "arrays": parameter_order(task)}


def generate_checked(task: Task) -> dict[str, np.ndarray]:
    """Freshly generated weights, checked against the rules' digest (UserError naming both on a mismatch)."""
    weights = task_module(task, "fidelity_reference").generate(task)
    found, expected = weights_digest(task, weights), task.inference["fidelity"]["weights"]["sha256"]
    if found != expected:
        raise UserError(
            f"{display_path(task.path)}: the fidelity weights generated here have SHA-256 {found}, "
            f"the rules pin {expected} (inference.fidelity.weights)",
            hint="a changed generator or dataset; `levelfield fidelity weights` prints the digest of what it makes",
        )
    return weights


def load_fidelity_weights(task: Task) -> dict[str, np.ndarray]:
    """The task's pinned reference weights (float32 neutral arrays): from the cache when it holds a copy whose
    digest matches the rules, else generated, checked and cached."""
    spec = _cache_spec(task)
    cached = dataset_cache.read(spec)
    if cached is not None:
        if weights_digest(task, cached) == spec["sha256"]:
            return cached
        dataset_cache.discard(spec)
    weights = generate_checked(task)
    dataset_cache.write(spec, weights)
    return weights
