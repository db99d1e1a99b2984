"""The pre-norm encoder in float64 numpy: the framework-free reference computation (rules 1.2's fidelity gate).

    from levelfield.reference.seq_transformer.common.numpy_forward import encode, head
    hidden = encode(spec, weights, tokens)          # int [N, L] -> float64 [N, L, d_model], after the final LN
    logits = head(weights, hidden[mask])            # float64 [M, classes] at the positions asked for

Written from the model description alone (common/model_spec.py), for any
TransformerSpec (encoder-small, BERT-base's sizes): token + position
embedding; per layer x = x + MHA(LN(x)), x = x + FF(LN(x)) with LayerNorm
`(x - mean) / sqrt(var + LN_EPS) * scale + bias` (biased variance), attention
heads f // head_dim of every projection, softmax(q k^T / sqrt(head_dim)) v, the
exact erf GELU; the final LN; the per-position dense head. The head is applied
only where asked: at BERT's vocabulary a sequence's logits are 30 MiB of float64.

`erf` is numpy's missing error function, from Cephes' rational approximations
(Moshier, ndtr.c: the ones SciPy's erf uses), within 2 ulp of math.erf
(tests/test_fidelity_forward.py), so the GELU is exact to float64 without SciPy.

`encode(..., calibrate=hook)` lets the fidelity weights set data-dependent
output scales (seq_transformer_standard/common/fidelity.py): the hook sees each
residual branch's output and the stream it is added to, may rewrite that
branch's weights in `weights`, and the branch is then computed again with them.
Cost: ~23 GFLOP per 128-token sequence at BERT-base's sizes, ~1.5 s here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from levelfield.reference.seq_transformer.common.model_spec import LN_EPS, TransformerSpec

CHUNK = 8  # sequences per pass at BERT-base's sizes: [8, 128, 3072] float64 MLP activations, 25 MiB

# Cephes ndtr.c: erf(x) = x T(x^2) / U(x^2) for |x| <= 1; erfc(x) = exp(-x^2) P(x) / Q(x) for 1 < x < 8,
# exp(-x^2) R(x) / S(x) beyond. Highest power first; U, Q and S have a leading 1 (Cephes' p1evl).
_T = (
    9.60497373987051638749e0,
    9.00260197203842689217e1,
    2.23200534594684319226e3,
    7.00332514112805075473e3,
    5.55923013010394962768e4,
)
_U = (
    1.0,
    3.35617141647503099647e1,
    5.21357949780152679795e2,
    4.59432382970980127987e3,
    2.26290000613890934246e4,
    4.92673942608635921086e4,
)
_P = (
    2.46196981473530512524e-10,
    5.64189564831068821977e-1,
    7.46321056442269912687e0,
    4.86371970985681366614e1,
    1.96520832956077098242e2,
    5.26445194995477358631e2,
    9.34528527171957607540e2,
    1.02755188689515710272e3,
    5.57535335369399327526e2,
)
_Q = (
    1.0,
    1.32281951154744992508e1,
    8.67072140885989742329e1,
    3.54937778887819891062e2,
    9.75708501743205489753e2,
    1.82390916687909736289e3,
    2.24633760818710981792e3,
    1.65666309194161350182e3,
    5.57535340817727675546e2,
)
_R = (
    5.64189583547755073984e-1,
    1.27536670759978104416e0,
    5.01905042251180477414e0,
    6.16021097993053585195e0,
    7.40974269950448939160e0,
    2.97886665372100240670e0,
)
_S = (
    1.0,
    2.26052863220117276590e0,
    9.39603524938001434673e0,
    1.20489539808096656605e1,
    1.70814450747565897222e1,
    9.60896809063285878198e0,
    3.36907645100081516050e0,
)


def _poly(x: np.ndarray, coefficients: tuple[float, ...]) -> np.ndarray:
    out = np.full_like(x, coefficients[0])
    for c in coefficients[1:]:
        out = out * x + c
    return out


def erf(x: np.ndarray) -> np.ndarray:
    """The error function of float64 x, elementwise."""
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    small = a <= 1.0
    out = np.empty_like(x)
    s = x[small]
    z = s * s
    out[small] = s * _poly(z, _T) / _poly(z, _U)
    b = a[~small]
    with np.errstate(under="ignore"):
        tail = np.exp(-b * b) * np.where(b < 8.0, _poly(b, _P) / _poly(b, _Q), _poly(b, _R) / _poly(b, _S))
    out[~small] = np.copysign(1.0 - tail, x[~small])
    return out


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, x Phi(x) = x (1 + erf(x / sqrt 2)) / 2."""
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * scale + bias


def _w(weights: dict[str, np.ndarray], name: str) -> np.ndarray:
    return np.asarray(weights[name], np.float64)


def attention(spec: TransformerSpec, w: dict[str, np.ndarray], prefix: str, h: np.ndarray) -> np.ndarray:
    """Self-attention of h [N, L, d] -> [N, L, d] (no mask, no dropout)."""
    n, length, d = h.shape
    heads, hd = spec.num_heads, spec.head_dim

    def project(name):
        return (h @ _w(w, f"{prefix}.{name}.kernel") + _w(w, f"{prefix}.{name}.bias")).reshape(n, length, heads, hd)

    q, k, v = project("query"), project("key"), project("value")
    scores = np.einsum("nqhd,nkhd->nhqk", q, k) / np.sqrt(hd)  # [N, heads, L, L]
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    out = np.einsum("nhqk,nkhd->nqhd", weights, v).reshape(n, length, d)
    return out @ _w(w, f"{prefix}.output.kernel") + _w(w, f"{prefix}.output.bias")


def mlp(w: dict[str, np.ndarray], prefix: str, h: np.ndarray) -> np.ndarray:
    inner = gelu(h @ _w(w, f"{prefix}.dense1.kernel") + _w(w, f"{prefix}.dense1.bias"))
    return inner @ _w(w, f"{prefix}.dense2.kernel") + _w(w, f"{prefix}.dense2.bias")


def encode(
    spec: TransformerSpec,
    weights: dict[str, np.ndarray],
    tokens: np.ndarray,
    calibrate: Callable[[str, np.ndarray, np.ndarray], None] | None = None,
) -> np.ndarray:
    """float64 [N, L, d_model]: the hidden states after the final LayerNorm, for int tokens [N, L].

    With `calibrate`, give the whole calibration batch at once: it is called as calibrate("layer3.mlp",
    branch, stream) with each residual branch's output and the stream before it is added; the branch is then
    computed again from `weights`, which the hook may have changed."""
    tokens = np.asarray(tokens)
    if calibrate is not None:
        return _encode(spec, weights, tokens, calibrate)
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}  # converted once for every chunk
    return np.concatenate([_encode(spec, w, tokens[s : s + CHUNK], None) for s in range(0, len(tokens), CHUNK)])


def _encode(spec, w, tokens, calibrate) -> np.ndarray:
    x = _w(w, "token_embedding.embedding")[tokens] + _w(w, "position_embedding.embedding")[None, : tokens.shape[1]]
    for i in range(spec.num_layers):
        p = f"layer{i}"
        for name, branch_fn, norm in (
            ("attention", _attention_branch, "attention_norm"),
            ("mlp", _mlp_branch, "mlp_norm"),
        ):
            h = layer_norm(x, _w(w, f"{p}.{norm}.scale"), _w(w, f"{p}.{norm}.bias"))
            branch = branch_fn(spec, w, f"{p}.{name}", h)
            if calibrate is not None:
                calibrate(f"{p}.{name}", branch, x)
                branch = branch_fn(spec, w, f"{p}.{name}", h)
            x = x + branch
    return layer_norm(x, _w(w, "final_norm.scale"), _w(w, "final_norm.bias"))


def _attention_branch(spec, w, prefix, h):
    return attention(spec, w, prefix, h)


def _mlp_branch(spec, w, prefix, h):
    return mlp(w, prefix, h)


def head(weights: dict[str, np.ndarray], hidden: np.ndarray) -> np.ndarray:
    """float64 logits [..., classes] of hidden states [..., d_model]."""
    return hidden @ _w(weights, "head.kernel") + _w(weights, "head.bias")
