"""DLRM in float64 numpy: the framework-free reference computation (rules 1.2's fidelity gate).

    from levelfield.reference.ctr_dlrm.common.numpy_forward import forward
    logits = forward(spec, weights, dense, sparse)      # float32 [N, 13], int [N, fields] -> float64 [N]

Written from the model description alone (common/model_spec.py), for any
DLRMSpec (dlrm-small, MLPerf's DLRM): bottom MLP with ReLU after every layer,
one table row per field, the pairwise dots Z = T T^T of the stacked vectors
taken at INTERACTION_FLAT_INDEX (i < j, row-major), joined after the bottom
output, the top MLP with ReLU after every layer but the logit. Only the rows a
chunk looks up are converted to float64, so the 1.07 GiB of MLPerf-sized
tables are never copied. `calibrate(name, x)`, when given, is called with each
dense layer's input before the layer is applied, and may rewrite that layer's
kernel and bias in `weights` (fidelity.py scales every layer from the batch it
really sees, in one pass).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from levelfield.reference.ctr_dlrm.common.model_spec import DLRMSpec

CHUNK = 4096  # rows per pass: [4096, 27, 128] float64 vectors, 108 MiB


def _dense(w: dict[str, np.ndarray], name: str, x: np.ndarray) -> np.ndarray:
    return x @ np.asarray(w[f"{name}.kernel"], np.float64) + np.asarray(w[f"{name}.bias"], np.float64)


def forward(
    spec: DLRMSpec,
    weights: dict[str, np.ndarray],
    dense: np.ndarray,
    sparse: np.ndarray,
    calibrate: Callable[[str, np.ndarray], None] | None = None,
) -> np.ndarray:
    """float64 logits [N] of dense float [N, F] and sparse int [N, fields].

    With `calibrate`, give the whole calibration batch at once: it is called as calibrate("bottom.dense0", x)
    with each dense layer's float64 input [N, in] just before that layer reads its weights."""
    if calibrate is not None:
        return _forward(spec, weights, dense, sparse, calibrate)
    return np.concatenate(
        [
            _forward(spec, weights, dense[s : s + CHUNK], sparse[s : s + CHUNK], None)
            for s in range(0, len(dense), CHUNK)
        ]
    )


def _forward(spec, w, dense, sparse, calibrate) -> np.ndarray:
    x = np.asarray(dense, np.float64)
    for name, _, _ in spec.bottom_layers:  # ReLU after every bottom layer
        if calibrate is not None:
            calibrate(name, x)
        x = np.maximum(_dense(w, name, x), 0.0)
    sparse = np.asarray(sparse)
    vectors = [x] + [np.asarray(w[f"embedding{f}.table"][sparse[:, f]], np.float64) for f in range(spec.num_fields)]
    t = np.stack(vectors, axis=1)  # [N, vectors, dim]
    z = t @ t.transpose(0, 2, 1)  # [N, vectors, vectors]
    dots = z.reshape(len(t), -1)[:, spec.interaction_flat_index]  # [N, pairs]
    y = np.concatenate([x, dots], axis=1)
    for i, (name, _, _) in enumerate(spec.top_layers):
        if calibrate is not None:
            calibrate(name, y)
        y = _dense(w, name, y)
        if i < len(spec.top_layers) - 1:  # no ReLU on the logit
            y = np.maximum(y, 0.0)
    return y[:, 0]
