"""seq-transformer-standard in ONNX Runtime: seq-transformer's ONNX Runtime implementation at BERT-base's sizes.

    impl = Implementation(Recipe.from_task(task))          # mode="eager": no graph optimisation
    impl.load(init_weights(seed))
    tokens = impl.predict(model_inputs(arrays, "eval"))    # int32 [N, 128], the argmax token ids

Everything but the sizes and predict is seq-transformer's (reference/
seq_transformer/onnxruntime/implementation.py): chunks of at most 32 rows,
the graph ending in the argmax over the 30,522 classes, as every framework's
predict for this task answers token ids.
"""

from __future__ import annotations

from levelfield.reference.seq_transformer.onnxruntime.implementation import Implementation as SmallImplementation
from levelfield.reference.seq_transformer_standard.common.inputs import MAX_PREDICT_BATCH
from levelfield.reference.seq_transformer_standard.common.model_spec import SPEC


class Implementation(SmallImplementation):
    task_id = "seq-transformer-standard"
    spec = SPEC
    max_predict_batch = MAX_PREDICT_BATCH
    predict_argmax = True
