"""encoder-small in PyTorch: embeddings + nn.TransformerEncoder (pre-norm) + per-position head.

    model = EncoderSmall()        # or EncoderSmall(shapes) for another TransformerSpec
    logits = model(tokens)        # tokens int64/int32 [B, 12] -> float32 [B, 12, 10]

torch's own nn.TransformerEncoderLayer is exactly the rules' layer with
norm_first=True (x + MHA(LN(x)), x + FF(LN(x))), activation="gelu" (F.gelu,
the exact erf form), dropout=0 and layer_norm_eps=1e-5; its attention is
nn.MultiheadAttention (packed q/k/v in_proj, scale 1/sqrt(16)), batch_first.
Sizes come from common/model_spec.py. Weights are set by weights.py from the
neutral init, so the torch default initialisers here never matter.
"""

from __future__ import annotations

import torch
from torch import nn

from levelfield.reference.seq_transformer.common import model_spec as spec


class EncoderSmall(nn.Module):
    def __init__(self, shapes: spec.TransformerSpec = spec.SPEC):
        super().__init__()
        self.spec = shapes  # the sizes (seq-transformer-standard passes its own)
        self.token_embedding = nn.Embedding(shapes.vocab_size, shapes.d_model)  # [10, 64]
        self.position_embedding = nn.Embedding(shapes.seq_len, shapes.d_model)  # [12, 64]
        layer = nn.TransformerEncoderLayer(
            d_model=shapes.d_model,
            nhead=shapes.num_heads,
            dim_feedforward=shapes.ff_dim,
            dropout=0.0,
            activation="gelu",
            layer_norm_eps=spec.LN_EPS,
            batch_first=True,
            norm_first=True,
            bias=True,
        )
        # enable_nested_tensor only helps with padding masks, which this task has none of.
        self.encoder = nn.TransformerEncoder(
            layer,
            num_layers=shapes.num_layers,
            norm=nn.LayerNorm(shapes.d_model, eps=spec.LN_EPS),
            enable_nested_tensor=False,
        )
        self.head = nn.Linear(shapes.d_model, shapes.num_classes)
        # Positions 0..11, a buffer so it follows the module to its device; not a weight.
        self.register_buffer("positions", torch.arange(shapes.seq_len), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.token_embedding(tokens) + self.position_embedding(self.positions)  # [B, 12, 64]
        return self.head(self.encoder(x))  # [B, 12, 10]
