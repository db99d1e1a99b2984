"""seq-transformer-standard in PyTorch: seq-transformer's implementation at BERT-base's encoder sizes.

Called as every implementation is (reference/interface.py); predict answers the argmax token ids, int32 [N, 128].

Everything is seq-transformer's (reference/seq_transformer/pytorch/
implementation.py): nn.TransformerEncoder pre-norm under torch.compile, the
fused torch.optim.AdamW, mean cross-entropy over every position, DDP over
`--nproc N` processes, autocast for bf16. Only the sizes (this task's
TransformerSpec) and predict differ: chunks of at most 32 rows, each answered
as its argmax token ids, since the logits of a chunk are already 0.5 GiB at
BERT's vocabulary.
"""

from __future__ import annotations

from levelfield.reference.seq_transformer.pytorch.implementation import Implementation as SmallImplementation
from levelfield.reference.seq_transformer_standard.common.inputs import MAX_PREDICT_BATCH
from levelfield.reference.seq_transformer_standard.common.model_spec import SPEC


class Implementation(SmallImplementation):
    task_id = "seq-transformer-standard"
    # bf16 too, for inference (rules 1.2): torch.autocast, in the tiny task's predict and forward.
    precisions = ("fp32", "bf16")
    spec = SPEC
    max_predict_batch = MAX_PREDICT_BATCH
    predict_argmax = True
