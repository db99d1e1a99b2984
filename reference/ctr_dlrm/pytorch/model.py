"""dlrm-small as a torch.nn.Module (architecture: ctr_dlrm/common/model_spec.py).

    model = DLRMSmall()
    logits = model(dense, sparse)        # float32 [B, 13], int32/int64 [B, 8] -> float32 [B]

Embedding tables are plain `nn.Embedding(sparse=False)`: their gradients are
dense tensors, so torch.optim.Adam updates every row (rows not in the batch see
a zero gradient and decay their moments), the same semantics as TF and Optax.
DLRM's sparse=True + SparseAdam would update only the gathered rows' moments.
"""

from __future__ import annotations

import torch
from torch import nn

from levelfield.reference.ctr_dlrm.common import model_spec as spec


def mlp(layers: list[tuple[str, int, int]], relu_last: bool) -> nn.Sequential:
    """Linear(+ReLU) stack from model_spec's (name, in, out) list; ReLU after the last only if relu_last."""
    modules = []
    for i, (_, fan_in, fan_out) in enumerate(layers):
        modules.append(nn.Linear(fan_in, fan_out))
        if relu_last or i < len(layers) - 1:
            modules.append(nn.ReLU())
    return nn.Sequential(*modules)


class DLRMSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.ModuleList(nn.Embedding(rows, spec.EMBEDDING_DIM) for rows in spec.CARDINALITIES)
        self.bottom_mlp = mlp(spec.BOTTOM_LAYERS, relu_last=True)
        self.top_mlp = mlp(spec.TOP_LAYERS, relu_last=False)
        # Flat indices of the 36 (i < j) pairs in Z [B, 81]; not a weight, so not in state_dict.
        self.register_buffer("pair_index", torch.from_numpy(spec.INTERACTION_FLAT_INDEX).long(), persistent=False)

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        x = self.bottom_mlp(dense)  # [B, 16]
        vectors = [x] + [table(sparse[:, f]) for f, table in enumerate(self.embeddings)]
        t = torch.stack(vectors, dim=1)  # [B, 9, 16]
        z = torch.bmm(t, t.transpose(1, 2))  # [B, 9, 9]
        dots = z.flatten(1)[:, self.pair_index]  # [B, 36]
        return self.top_mlp(torch.cat([x, dots], dim=1)).squeeze(1)  # [B]
