"""NVIDIA accelerators as NVML sees them, for the system description.

    python -c "from levelfield.tools.accelerators import query_nvml; print(query_nvml())"

NVML comes from the `nvidia-ml-py` distribution (`import pynvml`). On a machine
without the package or without an NVIDIA driver, `query_nvml` returns a report
with no devices and the reason, never an exception: a CPU-only system is a
normal system here, not an error.

The pynvml module is looked up through `import_module` (default
`importlib.import_module`) so tests can hand in a fake module; this is the only
seam, the code below is the code that runs on a GPU machine.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

# What a system with no accelerator declares, as MLPerf descriptions do.
NO_ACCELERATOR = "none"
_BYTES_PER_GIB = 2**30
_MILLIWATTS_PER_WATT = 1000


def _text(value: Any) -> str:
    """NVML strings: older bindings return bytes, newer ones str."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace").strip("\x00 ")
    return str(value).strip()


def cuda_version_text(version: int) -> str:
    """NVML's CUDA driver version integer as people write it: 12040 -> "12.4"."""
    major, minor = divmod(int(version), 1000)
    return f"{major}.{minor // 10}"


def empty_report(reason: str) -> dict:
    """The report of a system where NVML found nothing (or could not look)."""
    return {"devices": [], "driver_version": None, "cuda_driver_version": None, "unavailable_reason": reason}


def _device(nvml, index: int, nvml_error: type[BaseException]) -> dict:
    """One device's model, memory (GiB) and power limit (W).

    A field NVML cannot read becomes a `<FILL: ...>` placeholder (model, memory)
    or null (power limit, which many boards do not expose), so the gap is
    visible and the schema makes the vendor fill required fields in.
    """
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    try:
        model_name = _text(nvml.nvmlDeviceGetName(handle))
    except nvml_error as e:
        model_name = f"<FILL: model name of accelerator {index} (NVML: {_text(e)})>"
    try:
        memory_gib: float | str = round(nvml.nvmlDeviceGetMemoryInfo(handle).total / _BYTES_PER_GIB, 1)
    except nvml_error as e:
        memory_gib = f"<FILL: memory of accelerator {index} in GiB (NVML: {_text(e)})>"
    try:
        power_limit_w = round(nvml.nvmlDeviceGetPowerManagementLimit(handle) / _MILLIWATTS_PER_WATT, 1)
    except nvml_error:
        power_limit_w = None
    return {"index": index, "model_name": model_name, "memory_capacity_gib": memory_gib,
            "power_limit_w": power_limit_w}


def query_nvml(import_module: Callable[[str], Any] = importlib.import_module) -> dict:
    """Devices, driver version and CUDA driver version, or an empty report with the reason.

    Returns {"devices": [{"index", "model_name", "memory_capacity_gib",
    "power_limit_w"}], "driver_version": str|None, "cuda_driver_version":
    str|None, "unavailable_reason": str|None}.
    """
    try:
        nvml = import_module("pynvml")
    except Exception as e:  # ImportError, or a broken install: either way no NVML
        return empty_report(f"pynvml not importable ({type(e).__name__}: {e}); install levelfield[gpu]")
    nvml_error = getattr(nvml, "NVMLError", Exception)
    try:
        nvml.nvmlInit()
    except Exception as e:  # NVMLError_LibraryNotFound / DriverNotLoaded on CPU-only machines
        return empty_report(f"NVML could not start ({_text(e) or type(e).__name__})")
    try:
        count = nvml.nvmlDeviceGetCount()
        devices = [_device(nvml, i, nvml_error) for i in range(count)]
        try:
            driver_version = _text(nvml.nvmlSystemGetDriverVersion())
        except nvml_error:
            driver_version = None
        try:
            cuda_driver_version = cuda_version_text(nvml.nvmlSystemGetCudaDriverVersion())
        except nvml_error:
            cuda_driver_version = None
        return {"devices": devices, "driver_version": driver_version,
                "cuda_driver_version": cuda_driver_version, "unavailable_reason": None}
    except nvml_error as e:
        # A driver that starts but then fails to enumerate: report it, do not crash.
        return empty_report(f"NVML query failed ({_text(e) or type(e).__name__})")
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # shutting down a half-started NVML must not hide the result
            pass


def accelerator_fields(report: dict) -> dict:
    """The MLPerf-style summary keys of a system description, from a `query_nvml` report.

    `accelerator_model_name` joins distinct models with " + " (mixed systems);
    `accelerator_memory_capacity_gib` is per accelerator, the smallest one, as
    the smallest device bounds what a benchmark can fit.
    """
    devices = report["devices"]
    if not devices:
        return {"accelerators_per_node": 0, "accelerator_model_name": NO_ACCELERATOR,
                "accelerator_memory_capacity_gib": 0, "accelerators": []}
    models = list(dict.fromkeys(d["model_name"] for d in devices))
    memories = [d["memory_capacity_gib"] for d in devices if isinstance(d["memory_capacity_gib"], (int, float))]
    return {
        "accelerators_per_node": len(devices),
        "accelerator_model_name": " + ".join(models),
        "accelerator_memory_capacity_gib": min(memories) if memories else devices[0]["memory_capacity_gib"],
        "accelerators": devices,
    }
