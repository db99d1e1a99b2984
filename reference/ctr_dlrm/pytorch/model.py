"""dlrm-small as a torch.nn.Module (architecture: ctr_dlrm/common/model_spec.py).

    model = DLRMSmall()                  # ctr-dlrm's shapes; DLRMSmall(spec) for another DLRMSpec
    logits = model(dense, sparse)        # float32 [B, 13], int32/int64 [B, 8] -> float32 [B]

Embedding tables are plain `nn.Embedding(sparse=False)`: their gradients are
dense tensors, so torch.optim.Adam updates every row (rows not in the batch see
a zero gradient and decay their moments), the same semantics as TF and Optax.
DLRM's sparse=True + SparseAdam would update only the gathered rows' moments.
`sparse_embeddings=True` (ctr-dlrm-standard, plain SGD) makes the tables'
gradients sparse tensors, so torch.optim.SGD updates only the looked-up rows:
the same numbers as a dense zero gradient for the others, without touching them.
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
    def __init__(self, shapes: spec.DLRMSpec = spec.SPEC, sparse_embeddings: bool = False):
        super().__init__()
        self.spec = shapes
        self.embeddings = nn.ModuleList(
            nn.Embedding(rows, shapes.embedding_dim, sparse=sparse_embeddings) for rows in shapes.cardinalities
        )
        self.bottom_mlp = mlp(shapes.bottom_layers, relu_last=True)
        self.top_mlp = mlp(shapes.top_layers, relu_last=False)
        # Flat indices of the 36 (i < j) pairs in Z [B, 81]; not a weight, so not in state_dict.
        self.register_buffer("pair_index", torch.from_numpy(shapes.interaction_flat_index).long(), persistent=False)

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        x = self.bottom_mlp(dense)  # [B, 16]
        vectors = [x] + [table(sparse[:, f]) for f, table in enumerate(self.embeddings)]
        t = torch.stack(vectors, dim=1)  # [B, 9, 16]
        z = torch.bmm(t, t.transpose(1, 2))  # [B, 9, 9]
        dots = z.flatten(1)[:, self.pair_index]  # [B, 36]
        return self.top_mlp(torch.cat([x, dots], dim=1)).squeeze(1)  # [B]
