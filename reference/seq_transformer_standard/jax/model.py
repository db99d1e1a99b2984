"""encoder-bert-base as a Flax linen module: seq-transformer's EncoderSmall at this task's sizes.

model = EncoderStandard()            # 132,066,618 parameters (0.49 GiB)
logits = model.apply({"params": params}, tokens)   # int32 [B, 128] -> float32 [B, 128, 30522]
"""

from __future__ import annotations

from levelfield.reference.seq_transformer.common.model_spec import TransformerSpec
from levelfield.reference.seq_transformer.jax.model import EncoderSmall
from levelfield.reference.seq_transformer_standard.common.model_spec import SPEC


def EncoderStandard(shapes: TransformerSpec = SPEC) -> EncoderSmall:
    """The network at `shapes` (default: this task's; tests pass SPEC.resized(...))."""
    return EncoderSmall(shapes)
