"""ONNX Runtime sessions as levelfield runs them: the device, the execution provider, threads, optimisation.

    from levelfield.reference.frameworks.onnxruntime.session import new_session, ort_device, determinism_settings
    device = ort_device("cpu")                          # --device's names; None: CUDA when offered, else CPU
    session = new_session(served.model_path, "compiled", device)
    logits = session.run(["logits"], {"images": x})[0]

The execution provider is the device's: CPUExecutionProvider, or
CUDAExecutionProvider where the installed distribution offers it
(`onnxruntime-gpu`; the CPU wheel `onnxruntime` has none). On CUDA, TF32 is off
(the provider's `use_tf32` 0), since fp32 means fp32 in every framework
(docs/fairness.md). The compile modes map onto the graph optimisation level:
compiled is ORT_ENABLE_ALL (constant folding, node fusions such as conv + batch
norm, layouts; ONNX Runtime's own default), eager is ORT_DISABLE_ALL (every node
of the graph as built, one kernel each). Threads: the intra-op pool gets every
core this process may run on (os.sched_getaffinity; PyTorch's and TensorFlow's
pools do the same), sequential execution (the graphs are chains; one inter-op
thread). Everything chosen here is what `determinism_settings` reports and
result.json records.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import onnxruntime as ort

from levelfield.reference.interface import (
    COMPILED,
    EAGER,
    DeviceUnavailable,
    determinism_record,
    device_record,
    parse_device,
)

if TYPE_CHECKING:
    from pathlib import Path

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
OPTIMIZATION_LEVELS = {COMPILED: "ORT_ENABLE_ALL", EAGER: "ORT_DISABLE_ALL"}
EXECUTION_MODE = "ORT_SEQUENTIAL"
INTER_OP_THREADS = 1  # sequential execution runs one node at a time: no inter-op pool
LOG_ERRORS_ONLY = 3  # ONNX Runtime's severity: 3 = errors (its warnings about unused initializers are noise here)


def cuda_offered() -> bool:
    """Whether the installed ONNX Runtime has the CUDA execution provider (onnxruntime-gpu)."""
    return PROVIDERS["cuda"] in ort.get_available_providers()


def ort_device(requested: str | None) -> str:
    """The device for `--device` (interface.parse_device's names): "cpu" or "cuda:N"; None: "cuda:0" when the
    CUDA provider is offered, else "cpu". DeviceUnavailable where the CUDA provider is not installed."""
    if requested is None:
        return "cuda:0" if cuda_offered() else "cpu"
    kind, index = parse_device(requested)
    if kind == "cpu":
        return "cpu"
    if not cuda_offered():
        raise DeviceUnavailable(
            f"device {requested!r}: this onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu)"
        )
    return f"cuda:{index or 0}"


def intra_op_threads() -> int:
    """The cores this process may run on (its CPU affinity), all given to one op."""
    return len(os.sched_getaffinity(0))


def provider_list(device: str) -> list:
    """The providers a session on `device` gets, with their options: CUDA (its index, TF32 off), or the CPU."""
    if device == "cpu":
        return [PROVIDERS["cpu"]]
    index = int(device.partition(":")[2] or 0)
    return [(PROVIDERS["cuda"], {"device_id": index, "use_tf32": 0}), PROVIDERS["cpu"]]


def new_session(model_path: Path, mode: str, device: str) -> ort.InferenceSession:
    """A session over the model file (its external data beside it) with levelfield's settings."""
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPTIMIZATION_LEVELS[mode])
    options.execution_mode = getattr(ort.ExecutionMode, EXECUTION_MODE)
    options.intra_op_num_threads = intra_op_threads()
    options.inter_op_num_threads = INTER_OP_THREADS
    options.log_severity_level = LOG_ERRORS_ONLY
    return ort.InferenceSession(str(model_path), options, providers=provider_list(device))


def determinism_settings(mode: str, device: str, session: ort.InferenceSession | None) -> dict:
    """`Implementation.determinism_settings()` of every ONNX Runtime implementation: the execution provider
    (the session's first, once loaded), the optimisation level, the execution mode, TF32 on CUDA, threads."""
    providers = (
        session.get_providers()
        if session is not None
        else [p if isinstance(p, str) else p[0] for p in provider_list(device)]
    )
    framework = {
        "execution_provider": providers[0],
        "providers": list(providers),
        "graph_optimization_level": OPTIMIZATION_LEVELS[mode],
        "execution_mode": EXECUTION_MODE,
        "use_deterministic_compute": False,
    }
    if device != "cpu":
        framework["cuda_use_tf32"] = False
    threads = {"intra_op": intra_op_threads(), "inter_op": INTER_OP_THREADS}
    return determinism_record(mode, framework=framework, threads=threads, device=device_facts(device))


def device_facts(device: str) -> dict:
    """The device a session computes on: the CPU, or a GPU as NVML names it (ONNX Runtime reports no CUDA,
    cuDNN or NCCL versions)."""
    if device == "cpu":
        return device_record("cpu", None, 1, None, None, None)
    from levelfield.ground.accelerators import query_nvml

    gpus = query_nvml()["devices"]
    index = int(device.partition(":")[2] or 0)
    name = gpus[index]["model_name"] if index < len(gpus) else None
    return device_record("cuda", name, max(len(gpus), 1), None, None, None)


# What set_train_data / train_steps of every ONNX Runtime implementation say (the trainer refuses earlier).
INFERENCE_ONLY = "onnxruntime serves inference only; train with pytorch, tensorflow or jax and serve their weights"
