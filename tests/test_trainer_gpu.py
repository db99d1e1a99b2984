"""GPU figures in training logs (energy, device memory), tested against tests/fakes/fake_pynvml.py.

There is no GPU here: these tests drive the real NVML code path with the fake
module (handed in as `pynvml`) and check that a CPU run logs none of it.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest
from test_trainer import GPU_KEYS, mllog_records

from levelfield.ground.accelerators import energy_j, gpu_selectors, open_gpu_meter
from levelfield.harness.options import TrainOptions
from levelfield.harness.run_outcome import RunOutcome
from levelfield.harness.runlog import RunLog
from levelfield.harness.trainer import Trainer, now_ms

_FAKE_PATH = Path(__file__).parent / "fakes" / "fake_pynvml.py"
_spec = importlib.util.spec_from_file_location("levelfield_tests_fake_pynvml", _FAKE_PATH)
fake_pynvml = sys.modules.get(_spec.name) or importlib.util.module_from_spec(_spec)
if _spec.name not in sys.modules:
    sys.modules[_spec.name] = fake_pynvml  # dataclasses look their module up here
    _spec.loader.exec_module(fake_pynvml)
FakeDevice = fake_pynvml.FakeDevice
GIB = 2**30
MIB = 2**20


def two_gpus() -> list:
    return [
        FakeDevice(
            "NVIDIA H100 80GB HBM3", 80 * GIB, 700_000, uuid="GPU-aaaa", energy_mj=5_000_000, memory_used_bytes=3 * GIB
        ),
        FakeDevice(
            "NVIDIA H100 80GB HBM3", 80 * GIB, 700_000, uuid="GPU-bbbb", energy_mj=9_000_000, memory_used_bytes=1 * GIB
        ),
    ]


def importer(fake):
    return lambda name: fake


def test_meter_sums_energy_and_memory_of_the_gpus_in_use():
    devices = two_gpus()
    fake = fake_pynvml.build(devices)
    meter = open_gpu_meter(2, importer(fake), environ={})
    start = meter.energy_mj()
    devices[0].energy_mj += 1_500_000  # 1500 J on GPU 0, 250 J on GPU 1 during the "run"
    devices[1].energy_mj += 250_000
    assert energy_j(start, meter.energy_mj()) == pytest.approx(1750.0)
    assert meter.memory_used_mib() == pytest.approx(4 * GIB / MIB)
    meter.close()
    assert fake.calls[-1] == "nvmlShutdown"


def test_one_process_measures_only_the_first_gpu():
    devices = two_gpus()
    meter = open_gpu_meter(1, importer(fake_pynvml.build(devices)), environ={})
    start = meter.energy_mj()
    devices[0].energy_mj += 1000
    devices[1].energy_mj += 10**9  # an idle neighbour's counter must not count
    assert energy_j(start, meter.energy_mj()) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "visible, count, expected",
    [
        (None, 2, [0, 1]),
        ("1", 1, [1]),
        ("GPU-bbbb,GPU-aaaa", 2, ["GPU-bbbb", "GPU-aaaa"]),
        ("3,2,1", 2, [3, 2]),
        ("", 1, None),  # CUDA sees no GPU
        ("-1", 1, None),
        ("0,-1,1", 2, None),  # CUDA stops at the first invalid entry
        ("MIG-1234", 1, None),  # MIG instances have no energy counter of their own
        ("0", 2, None),  # fewer GPUs than processes
    ],
)
def test_gpu_selectors_follow_cuda_visible_devices(visible, count, expected):
    environ = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert gpu_selectors(count, environ) == expected


def test_meter_finds_gpus_by_uuid():
    devices = two_gpus()
    meter = open_gpu_meter(1, importer(fake_pynvml.build(devices)), environ={"CUDA_VISIBLE_DEVICES": "GPU-bbbb"})
    assert meter.memory_used_mib() == pytest.approx(1 * GIB / MIB)


def test_no_meter_without_nvml_or_its_gpus():
    def missing(name):
        raise ImportError("No module named 'pynvml'")

    assert open_gpu_meter(1, missing, environ={}) is None
    assert open_gpu_meter(1, importer(fake_pynvml.build([], init_error="Driver Not Loaded")), environ={}) is None
    unknown = fake_pynvml.build(two_gpus())
    assert open_gpu_meter(1, importer(unknown), environ={"CUDA_VISIBLE_DEVICES": "GPU-cccc"}) is None
    assert unknown.calls[-1] == "nvmlShutdown"


def test_a_gpu_without_an_energy_counter_gives_no_energy():
    devices = two_gpus()
    devices[0].energy_mj = None  # before Volta
    meter = open_gpu_meter(1, importer(fake_pynvml.build(devices)), environ={})
    assert meter.energy_mj() is None and energy_j(None, None) is None
    assert meter.memory_used_mib() == pytest.approx(3 * GIB / MIB)


# -- the trainer's use of it: what lands in the log -------------------------------------------
@pytest.fixture
def trainer(tmp_path):
    return Trainer(TrainOptions(task_id="ctr-dlrm", framework="pytorch", out=tmp_path, profile="smoke", seed=1))


def finish_run(trainer, impl, tmp_path, advance_mj: int = 0, devices=None) -> dict:
    """run_start -> run_stop of a run on `impl`, the way run_one does it; the logged records by key."""
    log = RunLog(tmp_path / "result_0.txt")
    start_ms = now_ms()
    log.start("run_start", time_ms=start_ms)
    meter = trainer._meter(impl)  # reads the energy counters at "run_start"
    for device in devices or []:
        device.energy_mj += advance_mj
    outcome = RunOutcome.started(0, 1, log.path)
    outcome.reason, outcome.epochs = "max epochs", 1
    trainer._finish(log, outcome, impl, meter, start_ms)
    log.close()
    return {r["key"]: r for r in mllog_records(tmp_path / "result_0.txt")}


def test_a_gpu_run_logs_energy_and_device_memory(trainer, tmp_path, monkeypatch):
    devices = two_gpus()
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml.build(devices))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    impl = types.SimpleNamespace(device="cuda:0", peak_device_memory_mib=lambda: 812.5)
    logged = finish_run(trainer, impl, tmp_path, advance_mj=42_000, devices=devices)
    assert logged["levelfield_energy_j"]["value"] == pytest.approx(42.0)  # mJ -> J, GPU 0 only
    assert logged["levelfield_peak_device_memory_mib"]["value"] == 812.5
    assert logged["levelfield_device_memory_used_mib"]["value"] == pytest.approx(3 * GIB / MIB)
    assert logged["levelfield_peak_device_memory_used_mib"]["value"] == pytest.approx(3 * GIB / MIB)
    keys = list(logged)
    assert keys.index("levelfield_peak_rss_mib") < keys.index("levelfield_energy_j") < keys.index("run_stop")


def test_a_cpu_run_logs_no_gpu_figures_even_on_a_gpu_machine(trainer, tmp_path, monkeypatch):
    fake = fake_pynvml.build(two_gpus())
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    impl = types.SimpleNamespace(device="cpu", peak_device_memory_mib=lambda: None)
    logged = finish_run(trainer, impl, tmp_path)
    assert not set(GPU_KEYS) & set(logged)
    assert logged["levelfield_energy_j"]["value"] == "not measured"  # said, not left to guess
    assert fake.calls == [], "NVML is not even asked for a run on the CPU"
