"""ctr-dlrm-standard in ONNX Runtime: ctr-dlrm's ONNX Runtime implementation at MLPerf DLRM's shapes.

    impl = Implementation(Recipe.from_task(task))          # mode="eager": no graph optimisation
    impl.load(init_weights(seed))                          # 1.07 GiB of tables into the model file's weights
    logits = impl.predict(model_inputs(arrays, "eval"))    # float32 [N]

Everything but the shapes is ctr-dlrm's (reference/ctr_dlrm/onnxruntime/
implementation.py). The model file keeps the tables as external data beside
the graph (reference/frameworks/onnxruntime/model_file.py), so the graph file
stays small and the 1.07 GiB are written once per weights into the cache.
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.onnxruntime.implementation import Implementation as SmallImplementation
from levelfield.reference.ctr_dlrm_standard.common.model_spec import SPEC


class Implementation(SmallImplementation):
    task_id = "ctr-dlrm-standard"
    spec = SPEC
