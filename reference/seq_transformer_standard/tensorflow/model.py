"""encoder-bert-base as a Keras 3 model: seq-transformer's EncoderSmall at this task's sizes.

model = build_model()                # 132,066,618 parameters (0.49 GiB)
logits = model(tokens)               # int32 [B, 128] -> float32 [B, 128, 30522]
"""

from __future__ import annotations

from levelfield.reference.seq_transformer.common.model_spec import TransformerSpec
from levelfield.reference.seq_transformer.tensorflow.model import EncoderSmall
from levelfield.reference.seq_transformer.tensorflow.model import build_model as build_small
from levelfield.reference.seq_transformer_standard.common.model_spec import SPEC


def build_model(shapes: TransformerSpec = SPEC) -> EncoderSmall:
    """The network at `shapes` (default: this task's; tests pass SPEC.resized(...)), variables created."""
    return build_small(shapes)
