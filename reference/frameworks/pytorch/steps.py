"""The PyTorch implementations' `train_steps` loop, shared: one fused optimizer step per batch, one host sync per call.

    return run_steps(self._loss, self.model, self.optimizer, batch_indices, learning_rates, self.device, self.scaler)
    return run_steps(self._loss, ..., batches=self.pipeline.batches(batch_indices, plans))  # an input pipeline

Each implementation supplies only what differs per task: `_loss(rows)`, which
gathers the batch of those training rows (already on the device) and returns
the mean loss of the (possibly torch.compile'd) model on it. The loop sets the
step's learning rate as a Python float in every param group, so a new rate
never recompiles anything, and runs the implementation's optimizer step
(torch's fused kernels) outside the compiled region. A task whose batches come
from an input pipeline (image-resnet50-standard) hands its batches over
instead, and `_loss(batch)` gets each in turn.

`ENOUGH_GRAPHS` raises Dynamo's graph limit around the calls that compile one
graph per padded predict size.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

from levelfield.reference.frameworks.pytorch.parallel import default_device
from levelfield.reference.interface import determinism_record, device_record


def _fp32_means_fp32() -> None:
    """fp32 means fp32 on a GPU too: TF32 off for cuBLAS matmuls and cuDNN convolutions in this process.

    PyTorch computes cuDNN convolutions in TF32 by default on Ampere and later (10 mantissa bits), which the
    equivalence tolerances and the other frameworks' fp32 would not match; mixed precision stays a rules
    choice (autocast), never a side effect. Set once, as any PyTorch implementation is imported; recorded
    by `determinism_settings`. No effect on a CPU.
    """
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


_fp32_means_fp32()

# Dynamo keeps at most `recompile_limit` (default 8) graphs per function and silently runs eager beyond it;
# compiled mode needs up to 11 predict buckets + the training graph (+ test shapes). A decorator (re-entrant).
ENOUGH_GRAPHS = torch._dynamo.config.patch(recompile_limit=24)


def compiled_forwards(
    model: torch.nn.Module, train_model: torch.nn.Module, compiled: bool
) -> tuple[torch.nn.Module, torch.nn.Module]:
    """(`_forward`, `_train_forward`): the model and its training wrapper (DDP's under torchrun, else the model
    itself), each torch.compile'd in compiled mode, one compiled callable when they are the same module.

    dynamic=False: every shape is static, as the padded buckets of predict_chunks intend; train / eval mode
    and each padded predict size are separate graphs.
    """
    if not compiled:
        return model, train_model
    forward = torch.compile(model, dynamic=False)
    return forward, forward if train_model is model else torch.compile(train_model, dynamic=False)


def run_steps(
    loss: Callable[[Any], torch.Tensor],
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batch_indices: np.ndarray,
    learning_rates: np.ndarray,
    device: str | torch.device,
    scaler: torch.amp.GradScaler | None = None,
    batches: Iterable | None = None,
) -> np.ndarray:
    """float32 losses [steps]; `loss(rows) -> scalar tensor` is the mean loss of the batch of int64 `rows` [batch].

    `scaler` (fp16, `grad_scaler`): the loss is scaled before backward, the step unscales the gradients and
    is skipped where they overflowed, and the scale adapts (torch.amp's recipe); the loss returned is unscaled.
    `batches`: one batch per row of `batch_indices`, in order, as an input pipeline yields them;
    `loss(batch)` then gets each batch instead of its rows.
    """
    if len(batch_indices) == 0:  # the trainer may hand over an empty chunk; torch.stack([]) would raise
        return np.zeros(0, np.float32)
    if batches is None:
        batches = torch.from_numpy(np.asarray(batch_indices, np.int64)).to(device)  # [steps, batch]
    model.train()
    losses = []
    # float64 then float(): the exact value of the trainer's (float32 or float64) rate, as torch's param_groups hold it.
    for batch, lr in zip(batches, np.asarray(learning_rates, np.float64), strict=True):
        for group in optimizer.param_groups:
            group["lr"] = float(lr)
        optimizer.zero_grad(set_to_none=True)
        step_loss = loss(batch)
        if scaler is not None and scaler.is_enabled():
            scaler.scale(step_loss).backward()
            scaler.step(optimizer)  # the fused SGD unscales in its kernel and skips on inf/NaN
            scaler.update()
        else:
            step_loss.backward()
            optimizer.step()
        losses.append(step_loss.detach())
    return torch.stack(losses).cpu().numpy().astype(np.float32)  # the one host sync: every loss at once


def determinism_settings(mode: str, device: str | None = None) -> dict:
    """`Implementation.determinism_settings()` of every PyTorch implementation: the switches as torch reports
    them in this process now (levelfield sets none of the determinism switches, docs/training.md,
    "Determinism"; it turns TF32 off, `_fp32_means_fp32`), and the device."""
    return determinism_record(
        mode,
        framework={
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "deterministic_algorithms_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
            "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
            "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        },
        # OpenMP's pool for one op, and the pool that runs independent ops (torch.jit's fork) side by side.
        threads={"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()},
        device=device_facts(device or default_device()),
    )


def device_facts(device: str) -> dict:
    """The torch device `device` ("cpu", "cuda:N"): a GPU's name and how many PyTorch sees, with the CUDA
    runtime, cuDNN and NCCL versions torch was built with; or the CPU."""
    if torch.device(device).type != "cuda":
        return device_record("cpu", None, 1, None, None, None)
    nccl = torch.cuda.nccl.version() if torch.distributed.is_nccl_available() else None
    return device_record(
        "cuda",
        torch.cuda.get_device_name(torch.device(device)),
        torch.cuda.device_count(),
        torch.version.cuda,
        str(torch.backends.cudnn.version()),
        ".".join(map(str, nccl)) if nccl else None,
    )


# Rules precision -> autocast's compute dtype; fp32: autocast off. fp16 adds a GradScaler (grad_scaler).
AUTOCAST_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
# fp16's first loss scale in every framework: Keras' default (torch's and Flax's are 2**16), so a step
# that overflows, and is skipped, does so in all three alike. Growth (x2 after 2000 finite steps) and
# backoff (x0.5 on overflow) are the three frameworks' common defaults.
LOSS_SCALE_INIT = 2.0**15


def autocast(device: str | torch.device, precision: str) -> torch.autocast:
    """PyTorch's mixed-precision idiom (torchvision references' --amp): the forward pass and loss run under
    `torch.autocast`, which computes convs and matmuls in bfloat16 and keeps the float32 parameters, the
    loss and batch norm's statistics (torch's autocast lists) in float32; the optimizer sees float32
    gradients. One object, entered around every forward (it is reusable, not re-entrant). fp16: float16
    instead of bfloat16, with `grad_scaler`'s dynamic loss scale."""
    dtype = AUTOCAST_DTYPES[precision]
    kind = torch.device(device).type
    return torch.autocast(device_type=kind, dtype=dtype or torch.bfloat16, enabled=dtype is not None)


def mixed_only(context: torch.autocast) -> contextlib.AbstractContextManager:
    """`context` where it computes in a low precision, else no context at all. A disabled torch.autocast
    around a compiled model still changes the kernels Inductor generates: seq-transformer-standard's fp32
    weights after three compiled AdamW steps moved by 5e-6 under one (its equivalence test), so the tasks
    that added bf16 later (the encoder, the DLRM) enter autocast only to run bf16, and fp32 stays as it was."""
    return context if context._enabled else contextlib.nullcontext()


def grad_scaler(device: str | torch.device, precision: str) -> torch.amp.GradScaler:
    """torch.amp's dynamic loss scale, enabled for fp16 only (bfloat16 has float32's range, needs none)."""
    kind = torch.device(device).type
    return torch.amp.GradScaler(kind, init_scale=LOSS_SCALE_INIT, enabled=precision == "fp16")


def precision_in_use(context: torch.autocast, model: torch.nn.Module, scaler: torch.amp.GradScaler) -> str:
    """The rules' name of what runs, read back from the autocast context, the loss scaler and the
    parameters: fp32, bf16 (float32 parameters, autocast to bfloat16) or fp16 (autocast to float16 with
    loss scaling); anything else by its dtypes, which no rules allow."""
    dtypes = {p.dtype for p in model.parameters()}
    # torch.autocast keeps its settings as fast_dtype and _enabled; it has no public getter for them.
    compute = context.fast_dtype if context._enabled else torch.float32
    if dtypes == {torch.float32} and scaler.is_enabled() == (compute == torch.float16):
        for name, dtype in AUTOCAST_DTYPES.items():
            if (dtype or torch.float32) == compute:
                return name
    unscaled = {"float16 without loss scaling"} if compute == torch.float16 and not scaler.is_enabled() else set()
    return ",".join(sorted({str(d) for d in dtypes | {compute}} | unscaled))
