"""A fake `pynvml` module for tests: the NVML calls levelfield makes, answered from data.

    fake = build(devices=[FakeDevice("NVIDIA H100 80GB HBM3", 80 * 2**30, 700_000)])
    report = query_nvml(lambda name: fake)

Function names and return shapes follow nvidia-ml-py; `as_bytes=True` answers
strings as bytes, as bindings before 11.5 did. The module records calls in
`fake.calls` so tests can see that nvmlShutdown ran.

For the trainer's GPU meter, a device also has a UUID, a total-energy counter
in mJ (`energy_mj`; a test advances it between readings, None: not supported,
as before Volta) and used memory (default: half the total).

For the environment record (levelfield.ground.accelerators.gpu_settings), a device has its clocks now
and its application clocks in MHz per clock domain (NVML_CLOCK_GRAPHICS 0, SM 1, MEM 2), its ECC mode
(current, pending) and persistence mode (NVML_FEATURE_ENABLED 1, DISABLED 0); None: the call raises
NVMLError (not supported), as on boards without ECC or on drivers that hide application clocks.
"""

from __future__ import annotations

import types
from dataclasses import dataclass


class NVMLError(Exception):
    """Stands in for pynvml.NVMLError."""


@dataclass
class FakeDevice:
    name: str
    memory_total_bytes: int
    power_limit_mw: int | None  # None: the call raises NVMLError (not supported)
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    energy_mj: int | None = 0  # None: nvmlDeviceGetTotalEnergyConsumption raises (not supported)
    memory_used_bytes: int | None = None  # None: half of memory_total_bytes
    clocks_mhz: tuple[int, int, int] | None = (1980, 1980, 2619)  # graphics, SM, memory now
    application_clocks_mhz: tuple[int, int, int] | None = (1755, 1755, 2619)
    ecc: tuple[int, int] | None = (1, 1)  # current, pending
    persistence: int | None = 1


def build(
    devices: list[FakeDevice],
    *,
    driver_version: str = "550.54.15",
    cuda_driver_version: int = 12040,
    init_error: str | None = None,
    as_bytes: bool = False,
) -> types.ModuleType:
    fake = types.ModuleType("pynvml")
    fake.NVMLError = NVMLError
    fake.calls = []

    def text(value: str):
        return value.encode("utf-8") if as_bytes else value

    def record(name):
        fake.calls.append(name)

    def nvmlInit():
        record("nvmlInit")
        if init_error is not None:
            raise NVMLError(init_error)

    def nvmlShutdown():
        record("nvmlShutdown")

    def nvmlDeviceGetCount():
        return len(devices)

    def nvmlDeviceGetHandleByIndex(index):
        return devices[index]

    def nvmlDeviceGetName(handle):
        return text(handle.name)

    def nvmlDeviceGetMemoryInfo(handle):
        used = handle.memory_total_bytes // 2 if handle.memory_used_bytes is None else handle.memory_used_bytes
        return types.SimpleNamespace(total=handle.memory_total_bytes, free=handle.memory_total_bytes - used, used=used)

    def nvmlDeviceGetHandleByUUID(uuid):
        for device in devices:
            if device.uuid == uuid:
                return device
        raise NVMLError("Not Found")

    def nvmlDeviceGetTotalEnergyConsumption(handle):
        if handle.energy_mj is None:
            raise NVMLError("Not Supported")
        return handle.energy_mj

    def nvmlDeviceGetPowerManagementLimit(handle):
        if handle.power_limit_mw is None:
            raise NVMLError("Not Supported")
        return handle.power_limit_mw

    def supported(value):
        if value is None:
            raise NVMLError("Not Supported")
        return value

    def nvmlDeviceGetUUID(handle):
        return text(handle.uuid)

    def nvmlDeviceGetClockInfo(handle, domain):
        return supported(handle.clocks_mhz)[domain]

    def nvmlDeviceGetApplicationsClock(handle, domain):
        return supported(handle.application_clocks_mhz)[domain]

    def nvmlDeviceGetEccMode(handle):
        return list(supported(handle.ecc))

    def nvmlDeviceGetPersistenceMode(handle):
        return supported(handle.persistence)

    def nvmlSystemGetDriverVersion():
        return text(driver_version)

    def nvmlSystemGetCudaDriverVersion():
        return cuda_driver_version

    for fn in (
        nvmlInit,
        nvmlShutdown,
        nvmlDeviceGetCount,
        nvmlDeviceGetHandleByIndex,
        nvmlDeviceGetName,
        nvmlDeviceGetMemoryInfo,
        nvmlDeviceGetPowerManagementLimit,
        nvmlSystemGetDriverVersion,
        nvmlSystemGetCudaDriverVersion,
        nvmlDeviceGetHandleByUUID,
        nvmlDeviceGetTotalEnergyConsumption,
        nvmlDeviceGetUUID,
        nvmlDeviceGetClockInfo,
        nvmlDeviceGetApplicationsClock,
        nvmlDeviceGetEccMode,
        nvmlDeviceGetPersistenceMode,
    ):
        setattr(fake, fn.__name__, fn)
    return fake
