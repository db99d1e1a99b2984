"""NVIDIA accelerators as NVML sees them, for the system description.

    python -c "from levelfield.ground.accelerators import query_nvml; print(query_nvml())"

`open_gpu_meter` reads the GPUs' energy and memory counters for the trainer
(`levelfield_energy_j`, `levelfield_device_memory_used_mib`); it too answers
None, never an exception, when there is no NVML.

NVML comes from the `nvidia-ml-py` distribution (`import pynvml`). On a machine
without the package or without an NVIDIA driver, `query_nvml` returns a report
with no devices and the reason, never an exception: a CPU-only system is a
normal system here, not an error.

The pynvml module is looked up through `import_module` (default
`importlib.import_module`) so tests can hand in a fake module (and `open_gpu_meter`
an environment for CUDA_VISIBLE_DEVICES); these are the only
seams, the code below is the code that runs on a GPU machine.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any

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
    return {"index": index, "model_name": model_name, "memory_capacity_gib": memory_gib, "power_limit_w": power_limit_w}


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
        return {
            "devices": devices,
            "driver_version": driver_version,
            "cuda_driver_version": cuda_driver_version,
            "unavailable_reason": None,
        }
    except nvml_error as e:
        # A driver that starts but then fails to enumerate: report it, do not crash.
        return empty_report(f"NVML query failed ({_text(e) or type(e).__name__})")
    finally:
        with contextlib.suppress(Exception):  # shutting down a half-started NVML must not hide the result
            nvml.nvmlShutdown()


def accelerator_fields(report: dict) -> dict:
    """The MLPerf-style summary keys of a system description, from a `query_nvml` report.

    `accelerator_model_name` joins distinct models with " + " (mixed systems);
    `accelerator_memory_capacity_gib` is per accelerator, the smallest one, as
    the smallest device bounds what a benchmark can fit.
    """
    devices = report["devices"]
    if not devices:
        return {
            "accelerators_per_node": 0,
            "accelerator_model_name": NO_ACCELERATOR,
            "accelerator_memory_capacity_gib": 0,
            "accelerators": [],
        }
    models = list(dict.fromkeys(d["model_name"] for d in devices))
    memories = [d["memory_capacity_gib"] for d in devices if isinstance(d["memory_capacity_gib"], (int, float))]
    return {
        "accelerators_per_node": len(devices),
        "accelerator_model_name": " + ".join(models),
        "accelerator_memory_capacity_gib": min(memories) if memories else devices[0]["memory_capacity_gib"],
        "accelerators": devices,
    }


# -- energy and memory of the GPUs a training run uses (the trainer reads them at run_start / run_stop) --
_MILLIJOULES_PER_JOULE = 1000
_BYTES_PER_MIB = 2**20


def gpu_selectors(count: int, environ: Mapping[str, str] = os.environ) -> list[int | str] | None:
    """How to find, in NVML, the first `count` GPUs a framework uses: NVML indices or "GPU-<uuid>" strings.

    PyTorch rank r drives cuda:r; TensorFlow and JAX compute on their first
    GPU. CUDA numbers the GPUs CUDA_VISIBLE_DEVICES lists (when set) in that
    order; an integer entry is taken as an NVML index, which holds with
    CUDA_DEVICE_ORDER=PCI_BUS_ID (NVML's order) and on machines whose GPUs are
    all alike. None when the list is shorter or names MIG instances, which
    have no energy counter of their own.
    """
    listed = environ.get("CUDA_VISIBLE_DEVICES")
    if listed is None:
        return list(range(count))
    entries = [e.strip() for e in listed.split(",") if e.strip()]
    selectors: list[int | str] = []
    for entry in entries[:count]:
        if entry.lstrip("-").isdigit():
            if int(entry) < 0:  # CUDA stops at the first invalid entry
                break
            selectors.append(int(entry))
        elif entry.startswith("GPU-"):
            selectors.append(entry)
        else:
            return None
    return selectors if len(selectors) == count else None


class GpuMeter:
    """NVML counters of a set of GPUs: total energy (NVML: mJ since the driver loaded) and used memory."""

    def __init__(self, nvml: Any, handles: list, nvml_error: type[BaseException]):
        self._nvml, self._handles, self._error = nvml, handles, nvml_error

    def energy_mj(self) -> int | None:
        """Summed total-energy counters in mJ; None when a GPU has none (before Volta) or NVML fails."""
        try:
            return sum(int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in self._handles)
        except self._error:
            return None

    def memory_used_mib(self) -> float | None:
        """Memory in use on the GPUs (every process and pool on them), MiB; None when NVML fails."""
        try:
            return sum(self._nvml.nvmlDeviceGetMemoryInfo(h).used for h in self._handles) / _BYTES_PER_MIB
        except self._error:
            return None

    def close(self) -> None:
        with contextlib.suppress(Exception):  # shutting down must never hide a measurement
            self._nvml.nvmlShutdown()


def energy_j(start_mj: int | None, stop_mj: int | None) -> float | None:
    """Joules between two readings of GpuMeter.energy_mj; None unless both exist."""
    if start_mj is None or stop_mj is None:
        return None
    return (stop_mj - start_mj) / _MILLIJOULES_PER_JOULE


def open_gpu_meter(
    count: int, import_module: Callable[[str], Any] = importlib.import_module, environ: Mapping[str, str] = os.environ
) -> GpuMeter | None:
    """A GpuMeter of the first `count` GPUs the framework uses, or None without NVML or such GPUs.

    None is the normal answer of a CPU-only machine: the trainer then logs no
    energy and no device memory rather than made-up numbers.
    """
    selectors = gpu_selectors(count, environ)
    if not selectors:
        return None
    try:
        nvml = import_module("pynvml")
        nvml.nvmlInit()
    except Exception:  # not installed, no driver: no GPU to measure
        return None
    nvml_error = getattr(nvml, "NVMLError", Exception)
    try:
        handles = [
            nvml.nvmlDeviceGetHandleByUUID(s) if isinstance(s, str) else nvml.nvmlDeviceGetHandleByIndex(s)
            for s in selectors
        ]
    except Exception:  # NVMLError (no such device) or a binding without the call: nothing to measure
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
        return None
    return GpuMeter(nvml, handles, nvml_error)


# -- the GPUs' settings, for each run's environment record (environment.py) --------------------------
NOT_EXPOSED = "not exposed"  # a setting the driver does not report (or the board does not have)
# NVML's clock domains (pynvml NVML_CLOCK_GRAPHICS, _SM, _MEM), by the names the record uses.
_CLOCK_DOMAINS = {"graphics": 0, "sm": 1, "memory": 2}
_NVML_FEATURE_ENABLED = 1


def _nvml_value(call: Callable[[], Any], nvml_error: type[BaseException]) -> Any:
    """One NVML reading, or NOT_EXPOSED when the board or driver does not support it."""
    try:
        return call()
    except (nvml_error, AttributeError):  # AttributeError: a binding older than the call
        return NOT_EXPOSED


def _clocks(nvml, handle, reading: str, nvml_error) -> dict:
    call = getattr(nvml, reading, None)
    return {
        name: _nvml_value(lambda domain=domain: int(call(handle, domain)), nvml_error) if call else NOT_EXPOSED
        for name, domain in _CLOCK_DOMAINS.items()
    }


def _enabled(value: Any) -> bool | str:
    return value if value == NOT_EXPOSED else int(value) == _NVML_FEATURE_ENABLED


def gpu_settings(nvml: Any, index: int, nvml_error: type[BaseException]) -> dict:
    """What decides how fast one GPU runs besides its model: application clocks (MHz), power limit (W),
    ECC (current, pending) and persistence mode; and its clocks now (MHz), which move with load and
    temperature and so are recorded apart ("clocks_mhz", outside the environment's digest)."""
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    ecc = _nvml_value(lambda: nvml.nvmlDeviceGetEccMode(handle), nvml_error)
    power = _nvml_value(lambda: nvml.nvmlDeviceGetPowerManagementLimit(handle) / _MILLIWATTS_PER_WATT, nvml_error)
    return {
        "index": index,
        "uuid": _nvml_value(lambda: _text(nvml.nvmlDeviceGetUUID(handle)), nvml_error),
        "application_clocks_mhz": _clocks(nvml, handle, "nvmlDeviceGetApplicationsClock", nvml_error),
        "power_limit_w": power,
        "ecc": ecc if ecc == NOT_EXPOSED else {"current": _enabled(ecc[0]), "pending": _enabled(ecc[1])},
        "persistence_mode": _enabled(_nvml_value(lambda: nvml.nvmlDeviceGetPersistenceMode(handle), nvml_error)),
        "clocks_mhz": _clocks(nvml, handle, "nvmlDeviceGetClockInfo", nvml_error),
    }


def query_gpu_settings(import_module: Callable[[str], Any] = importlib.import_module) -> list[dict] | str:
    """gpu_settings of every GPU NVML sees; NOT_EXPOSED without NVML (no package, no driver: a CPU system)."""
    try:
        nvml = import_module("pynvml")
        nvml.nvmlInit()
    except Exception:  # not installed, or no driver
        return NOT_EXPOSED
    nvml_error = getattr(nvml, "NVMLError", Exception)
    try:
        return [gpu_settings(nvml, i, nvml_error) for i in range(nvml.nvmlDeviceGetCount())]
    except nvml_error:
        return NOT_EXPOSED
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
