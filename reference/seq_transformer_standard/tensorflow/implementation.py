"""seq-transformer-standard in TensorFlow: seq-transformer's implementation at BERT-base's encoder sizes.

Called as every implementation is (reference/interface.py); predict answers the argmax token ids, int32 [N, 128].

Everything is seq-transformer's (reference/seq_transformer/tensorflow/
implementation.py): the Keras encoder, the GradientTape step under
tf.function(jit_compile=True), torch's AdamW update,
MultiWorkerMirroredStrategy over `--nproc N` processes, the mixed_bfloat16
policy for bf16. Only the sizes (this task's TransformerSpec) and predict
differ: chunks of at most 32 rows, the argmax taken inside the compiled
predict so only token ids leave it.
"""

from __future__ import annotations

from levelfield.reference.seq_transformer.tensorflow.implementation import Implementation as SmallImplementation
from levelfield.reference.seq_transformer_standard.common.inputs import MAX_PREDICT_BATCH
from levelfield.reference.seq_transformer_standard.common.model_spec import SPEC


class Implementation(SmallImplementation):
    task_id = "seq-transformer-standard"
    # bf16 too, for inference (rules 1.2): the Keras dtype policy mixed_bfloat16, in the tiny task's model.
    precisions = ("fp32", "bf16")
    spec = SPEC
    max_predict_batch = MAX_PREDICT_BATCH
    predict_argmax = True
