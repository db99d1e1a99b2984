"""Neutral weights <-> EncoderSmall state_dict.

    from levelfield.reference.seq_transformer.pytorch.weights import load_neutral, export_neutral
    load_neutral(model, init_weights(0))
    neutral = export_neutral(model)

K is 0 or 1; L is encoder.layers.K.

| neutral name                          | torch state_dict key                   | layout change                      |
| ------------------------------------- | -------------------------------------- | ---------------------------------- |
| token_embedding.embedding [10,64]     | token_embedding.weight [10,64]         | none                               |
| position_embedding.embedding [12,64]  | position_embedding.weight [12,64]      | none                               |
| layerK.attention_norm.{scale,bias}    | L.norm1.{weight,bias}                  | none                               |
| layerK.attention.query.kernel [64,64] | L.self_attn.in_proj_weight[0:64]       | transpose, rows 0..63 of [192,64]  |
| layerK.attention.key.kernel           | L.self_attn.in_proj_weight[64:128]     | transpose, rows 64..127            |
| layerK.attention.value.kernel         | L.self_attn.in_proj_weight[128:192]    | transpose, rows 128..191           |
| layerK.attention.{query,key,value}.bias | L.self_attn.in_proj_bias[0:64 / 64:128 / 128:192] | slice of [192]        |
| layerK.attention.output.{kernel,bias} | L.self_attn.out_proj.{weight,bias}     | kernel transposed                  |
| layerK.mlp_norm.{scale,bias}          | L.norm2.{weight,bias}                  | none                               |
| layerK.mlp.dense1.{kernel,bias}       | L.linear1.{weight,bias}                | kernel transposed ([128,64])       |
| layerK.mlp.dense2.{kernel,bias}       | L.linear2.{weight,bias}                | kernel transposed ([64,128])       |
| final_norm.{scale,bias}               | encoder.norm.{weight,bias}             | none                               |
| head.{kernel,bias}                    | head.{weight,bias}                     | kernel transposed ([10,64])        |

torch's in_proj packs q, k, v as rows of one [192, 64] matrix (out-major), so
each neutral [in, out] kernel is the transpose of its 64-row block.
"""

from __future__ import annotations

import numpy as np
import torch

from levelfield.reference.weights import check_weights

_QKV = ("query", "key", "value")  # order of the blocks in in_proj_weight / in_proj_bias
_MODULES = {
    "attention_norm": "norm1",
    "mlp_norm": "norm2",
    "mlp.dense1": "linear1",
    "mlp.dense2": "linear2",
    "attention.output": "self_attn.out_proj",
}
_PARTS = {"kernel": "weight", "scale": "weight", "bias": "bias", "embedding": "weight"}


def torch_location(name: str, d_model: int) -> tuple[str, slice | None]:
    """(state_dict key, row slice of that tensor or None for the whole tensor) of one neutral name;
    `d_model` rows per q/k/v block of in_proj."""
    path, part = name.rsplit(".", 1)
    if path.startswith("layer"):
        index, module = path[len("layer") :].split(".", 1)
        prefix = f"encoder.layers.{index}."
        if module.startswith("attention.") and module.split(".")[1] in _QKV:
            block = _QKV.index(module.split(".")[1])
            key = "self_attn.in_proj_weight" if part == "kernel" else "self_attn.in_proj_bias"
            return prefix + key, slice(block * d_model, (block + 1) * d_model)
        return f"{prefix}{_MODULES[module]}.{_PARTS[part]}", None
    if path == "final_norm":
        return f"encoder.norm.{_PARTS[part]}", None
    return f"{path}.{_PARTS[part]}", None  # token_embedding, position_embedding, head


def _transposed(name: str) -> bool:
    return name.endswith(".kernel")  # every dense kernel: neutral [in, out], torch [out, in]


def load_neutral(model: torch.nn.Module, weights: dict[str, np.ndarray]) -> None:
    check_weights(weights, model.spec.parameter_shapes, f"{model.spec.task_id}/pytorch load")
    state = model.state_dict()
    with torch.no_grad():
        for name, value in weights.items():
            key, rows = torch_location(name, model.spec.d_model)
            target = state[key] if rows is None else state[key][rows]
            value = value.T if _transposed(name) else value
            target.copy_(torch.from_numpy(np.ascontiguousarray(value)).to(target.device))


def export_neutral(model: torch.nn.Module) -> dict[str, np.ndarray]:
    state = model.state_dict()
    out = {}
    for name in model.spec.parameter_shapes:
        key, rows = torch_location(name, model.spec.d_model)
        value = state[key].detach().cpu().numpy()
        value = value if rows is None else value[rows]
        out[name] = np.ascontiguousarray(value.T if _transposed(name) else value, dtype=np.float32)
    return out
