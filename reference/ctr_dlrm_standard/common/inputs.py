"""Dataset arrays -> model inputs and labels for ctr-dlrm-standard: ctr-dlrm's, unchanged (numpy only).

    inputs = model_inputs(arrays, "eval")   # {"dense": float32 [131072, 13], "sparse": int32 [131072, 26]}
    y = labels(arrays, "eval")              # float32 [131072]

Predict requests are cut into chunks of at most MAX_PREDICT_BATCH rows, each
padded to a power of two, as for ctr-dlrm (reference/ctr_dlrm/common/inputs.py).
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.common.inputs import (  # noqa: F401 - this module's interface
    MAX_PREDICT_BATCH,
    check_inputs,
    labels,
    model_inputs,
    pad_rows,
    predict_chunks,
)
