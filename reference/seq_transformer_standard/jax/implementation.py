"""seq-transformer-standard in JAX: seq-transformer's implementation at BERT-base's encoder sizes.

Called as every implementation is (reference/interface.py); predict answers the argmax token ids, int32 [N, 128].

Everything is seq-transformer's (reference/seq_transformer/jax/
implementation.py): the Flax encoder, optax.adamw in a TrainState, one
jax.jit'd step with the state donated, data parallel over `--nproc N`
processes, the modules' bfloat16 dtype for bf16. Only the sizes (this task's
TransformerSpec, one Flax module and predict program per spec) and predict
differ: chunks of at most 32 rows, the argmax taken inside the jitted predict.
"""

from __future__ import annotations

from levelfield.reference.seq_transformer.jax.implementation import Implementation as SmallImplementation
from levelfield.reference.seq_transformer_standard.common.inputs import MAX_PREDICT_BATCH
from levelfield.reference.seq_transformer_standard.common.model_spec import SPEC


class Implementation(SmallImplementation):
    task_id = "seq-transformer-standard"
    # bf16 too, for inference (rules 1.2): the Flax modules' dtype, in the tiny task's model.
    precisions = ("fp32", "bf16")
    spec = SPEC
    max_predict_batch = MAX_PREDICT_BATCH
    predict_argmax = True
