"""ResNet-50 v1.5 in float64 numpy: the framework-free reference computation of rules 1.2's fidelity gate.

    from levelfield.reference.image_resnet50_standard.common.numpy_forward import forward
    logits = forward(SPEC, weights, pixels)                  # uint8 [N, 224, 224, 3] -> float64 [N, 1000]
    stats = {}
    forward(SPEC, weights, pixels, calibrate=stats)          # batch-norm on the batch's own statistics,
                                                             # recorded in stats ("stem.bn.mean", ...)

Written from the model description alone (common/model_spec.py), the same
math as every framework's model in eval mode: the pixels normalised exactly as
the frameworks' predict does it, in float32 (augment.normalise: bit-identical
inputs), then everything in float64: convolutions with torch's explicit
padding (7x7 stride 2 pad 3 stem, 3x3 pad 1 with the stride on the 3x3: v1.5),
batch norm `(x - mean) / sqrt(var + eps) * scale + bias` with the running
statistics, the 3x3 stride-2 max pool padded with -inf, global average pool,
dense head. Layouts are the neutral ones (NHWC, kernels HWIO).

`calibrate`: every batch norm normalises with its input's own batch statistics
(mean and biased variance over N, H, W) instead of the running ones and
records them, passed through `round_stat` first (fidelity.py rounds them so
that the generated weights are bit-identical on any BLAS), so one pass sets
every layer's statistics for the inputs the layers before it really produce.

Cost: 4.1 GMAC per 224x224 image; the convolutions are one BLAS matmul each
(im2col), ~0.5 s per image on this 2-core CPU, in chunks of CHUNK images
(~0.5 GiB of float64 temporaries).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from levelfield.reference.fmnist_resnet.common.model_spec import BN_EPSILON
from levelfield.reference.image_resnet50_standard.common.augment import normalise
from levelfield.reference.image_resnet50_standard.common.model_spec import ResNetSpec, has_projection

CHUNK = 16  # images per pass: bounds the float64 temporaries (stage 1's im2col of 16 images: 230 MiB)


def conv(x: np.ndarray, kernel: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """float64 [N, H, W, C] (*) kernel [kh, kw, C, O], zero padding `pad` on each side -> [N, Ho, Wo, O]."""
    n, h, w, c = x.shape
    kh, kw, _, o = kernel.shape
    if pad:
        x = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    ho, wo = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    # im2col: the kh x kw shifted views side by side along channels, in the kernel's (i, j, c) order.
    views = [
        x[:, i : i + stride * (ho - 1) + 1 : stride, j : j + stride * (wo - 1) + 1 : stride]
        for i in range(kh)
        for j in range(kw)
    ]
    patches = views[0] if len(views) == 1 else np.concatenate(views, axis=-1)
    out = np.ascontiguousarray(patches).reshape(-1, kh * kw * c) @ kernel.reshape(kh * kw * c, o)
    return out.reshape(n, ho, wo, o)


def max_pool(x: np.ndarray) -> np.ndarray:
    """3x3, stride 2, padding 1 with -inf (every framework's max pool here): [N, H, W, C] -> [N, H/2, W/2, C]."""
    n, h, w, c = x.shape
    x = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-np.inf)
    ho, wo = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    out = np.full((n, ho, wo, c), -np.inf)
    for i in range(3):
        for j in range(3):
            np.maximum(out, x[:, i : i + 2 * (ho - 1) + 1 : 2, j : j + 2 * (wo - 1) + 1 : 2], out=out)
    return out


def forward(
    spec: ResNetSpec,
    weights: dict[str, np.ndarray],
    pixels: np.ndarray,
    calibrate: dict[str, np.ndarray] | None = None,
    round_stat: Callable[[np.ndarray], np.ndarray] = lambda v: v,
) -> np.ndarray:
    """float64 logits [N, classes] of uint8 centre crops [N, S, S, 3] (eval mode: running statistics).

    With `calibrate` (a dict, filled here) every batch norm uses round_stat(its batch's mean and biased
    variance) and records them under the neutral names; give the whole calibration batch at once then."""
    if calibrate is not None:
        return _forward(spec, {k: np.asarray(v, np.float64) for k, v in weights.items()}, pixels, calibrate, round_stat)
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    return np.concatenate(
        [_forward(spec, w, pixels[s : s + CHUNK], None, round_stat) for s in range(0, len(pixels), CHUNK)]
    )


def _forward(spec, w, pixels, calibrate, round_stat) -> np.ndarray:
    def bn(x, prefix):
        if calibrate is None:
            mean, var = w[f"{prefix}.mean"], w[f"{prefix}.var"]
        else:
            mean, var = round_stat(x.mean(axis=(0, 1, 2))), round_stat(x.var(axis=(0, 1, 2)))
            calibrate[f"{prefix}.mean"], calibrate[f"{prefix}.var"] = mean, var
        return (x - mean) / np.sqrt(var + BN_EPSILON) * w[f"{prefix}.scale"] + w[f"{prefix}.bias"]

    relu = lambda v: np.maximum(v, 0.0)  # noqa: E731
    x = normalise(pixels).astype(np.float64)  # the frameworks' float32 inputs, exactly
    x = max_pool(relu(bn(conv(x, w["stem.conv.kernel"], 2, 3), "stem.bn")))
    for name, cin, width, stride in spec.blocks():
        out = width * spec.expansion
        shortcut = x
        if has_projection(cin, out, stride):
            shortcut = bn(conv(x, w[f"{name}.proj.kernel"], stride, 0), f"{name}.proj_bn")
        y = relu(bn(conv(x, w[f"{name}.conv1.kernel"], 1, 0), f"{name}.bn1"))
        y = relu(bn(conv(y, w[f"{name}.conv2.kernel"], stride, 1), f"{name}.bn2"))
        y = bn(conv(y, w[f"{name}.conv3.kernel"], 1, 0), f"{name}.bn3")
        x = relu(y + shortcut)
    return features_to_logits(x.mean(axis=(1, 2)), w)


def features_to_logits(features: np.ndarray, weights: dict[str, np.ndarray]) -> np.ndarray:
    """The head: pooled features float64 [N, F] -> logits [N, classes]."""
    return features @ np.asarray(weights["head.kernel"], np.float64) + np.asarray(weights["head.bias"], np.float64)


def pooled_features(spec: ResNetSpec, weights: dict[str, np.ndarray], pixels: np.ndarray) -> np.ndarray:
    """float64 [N, F]: the globally pooled features the head reads (eval mode), by running the network with an
    identity head."""
    identity = {
        **weights,
        "head.kernel": np.eye(spec.features),
        "head.bias": np.zeros(spec.features),
    }
    return forward(spec, identity, pixels)
