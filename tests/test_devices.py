"""`--device`'s framework-neutral names, each framework's device for them, and the device record of a run.

The CUDA side cannot run here (no GPU): where a test needs one, it names the fake that stands in (torch's
and JAX's device queries and NVML's driver report, monkeypatched). The real path ran on an H200
(docs/scale.md, "GPU paths").
"""

from __future__ import annotations

import json

import jax
import pytest
import torch

from levelfield.ground.registry import load_implementation
from levelfield.reference import interface
from levelfield.reference.frameworks.jax import parallel as jax_parallel
from levelfield.reference.frameworks.jax import steps as jax_steps
from levelfield.reference.frameworks.jax.parallel import local_device
from levelfield.reference.frameworks.pytorch import steps as torch_steps
from levelfield.reference.frameworks.pytorch.parallel import torch_device
from levelfield.reference.frameworks.tensorflow import steps as tf_steps
from levelfield.reference.frameworks.tensorflow.parallel import tf_device
from levelfield.reference.interface import parse_device
from tests.conftest import assert_user_error, run_cli

FAKE_NVML = {"devices": [{"index": 0}], "driver_version": "580.159.04", "cuda_driver_version": "13.0"}


@pytest.mark.parametrize(
    "name, parsed", [("cpu", ("cpu", None)), ("cuda", ("cuda", None)), ("cuda:0", ("cuda", 0)), ("cuda:3", ("cuda", 3))]
)
def test_the_neutral_device_names(name, parsed):
    assert parse_device(name) == parsed


@pytest.mark.parametrize("name", ["gpu", "cuda:", "cuda:x", "cpu:0", "CUDA", "tpu:0", ""])
def test_another_device_name_is_refused_with_what_is_expected(name):
    with pytest.raises(ValueError, match=r"expected cpu, cuda or cuda:N"):
        parse_device(name)


def test_each_framework_maps_cpu_and_its_default_here():
    assert torch_device(None) == torch_device("cpu") == "cpu"
    assert tf_device(None) == tf_device("cpu") == "CPU:0"
    assert local_device("cpu") == local_device(None) == jax.local_devices(backend="cpu")[0]
    assert local_device(str(jax.local_devices()[0])) == jax.local_devices()[0]  # JAX's own names still work


@pytest.mark.parametrize(
    "resolve, framework",
    [(torch_device, "PyTorch sees 0 CUDA"), (tf_device, "TensorFlow sees 0 GPU"), (local_device, "JAX sees 0 cuda")],
)
def test_a_gpu_asked_for_where_there_is_none_is_one_clear_error(resolve, framework):
    with pytest.raises(ValueError, match=f"device 'cuda:1': {framework}"):
        resolve("cuda:1")


def test_a_jax_device_name_that_is_neither_is_refused():
    with pytest.raises(ValueError, match="no JAX device named 'gpu0': expected cpu, cuda or cuda:N, or one of"):
        local_device("gpu0")


@pytest.mark.parametrize(
    "facts",
    [
        lambda: torch_steps.device_facts("cpu"),
        lambda: tf_steps.device_facts("CPU:0"),
        lambda: jax_steps.device_facts(jax.local_devices()[0]),
    ],
)
def test_on_a_cpu_the_record_names_the_processor_and_no_cuda_versions(facts):
    record = facts()
    assert record["kind"] == "cpu" and record["count"] == 1 and record["name"]
    assert record["driver"] is record["cuda_runtime"] is record["cudnn"] is record["nccl"] is None


def test_torch_records_a_gpu_with_its_versions(monkeypatch):
    """Fakes: torch's CUDA queries and NVML's report (interface.query_nvml) stand in for an H100."""
    monkeypatch.setattr(interface, "query_nvml", lambda: FAKE_NVML)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91900)
    monkeypatch.setattr(torch.distributed, "is_nccl_available", lambda: True)
    monkeypatch.setattr(torch.cuda.nccl, "version", lambda: (2, 28, 9))
    record = torch_steps.device_facts("cuda:0")
    assert record == {
        "kind": "cuda",
        "name": "NVIDIA H100 80GB HBM3",
        "count": 8,
        "driver": "580.159.04",
        "cuda_runtime": "13.0",
        "cudnn": "91900",
        "nccl": "2.28.9",
    }


class _FakeGpu:
    """Stands in for a jax.Device of the CUDA plugin."""

    platform = "gpu"
    device_kind = "NVIDIA H200"


def test_jax_records_a_gpu_without_an_nccl_version(monkeypatch):
    """Fakes: a JAX GPU device object and NVML's report; the CUDA plugin's versions are absent on this CPU
    jaxlib, so they read as None here (on the H200 they read 13.0 and 91900)."""
    monkeypatch.setattr(interface, "query_nvml", lambda: FAKE_NVML)
    monkeypatch.setattr(jax, "local_devices", lambda backend=None: [_FakeGpu(), _FakeGpu()])
    record = jax_steps.device_facts(_FakeGpu())
    assert (record["kind"], record["name"], record["count"], record["driver"]) == (
        "cuda",
        "NVIDIA H200",
        2,
        "580.159.04",
    )
    assert record["nccl"] is None


def test_the_recorded_switches_say_tf32_is_off_in_every_framework():
    assert torch_steps.determinism_settings("compiled")["framework"]["cudnn_allow_tf32"] is False
    assert torch_steps.determinism_settings("compiled")["framework"]["matmul_allow_tf32"] is False
    assert tf_steps.determinism_settings("compiled")["framework"]["tensor_float_32_execution"] is False
    assert jax_steps.determinism_settings("compiled")["framework"]["jax_default_matmul_precision"] == "highest"
    assert jax.config.jax_default_matmul_precision == jax_parallel.FP32_MATMUL_PRECISION


@pytest.mark.parametrize("framework", ["pytorch", "tensorflow", "jax"])
def test_each_implementation_says_why_it_cannot_take_a_device(framework):
    implementation = load_implementation("ctr-dlrm", framework)
    assert implementation.device_refusal(None) is None and implementation.device_refusal("cpu") is None
    assert "sees 0" in implementation.device_refusal("cuda:0")
    assert "expected cpu, cuda or cuda:N" in implementation.device_refusal("gpu:0")


@pytest.mark.parametrize(
    "command",
    [
        ("train", "--framework", "pytorch", "--device", "cuda", "--runs", "1"),
        ("infer", "--framework", "jax", "--device", "cuda:0", "--scenario", "offline", "--mode", "performance"),
        ("infer", "--framework", "tensorflow", "--device", "gpu", "--scenario", "offline", "--mode", "accuracy"),
    ],
)
def test_a_device_this_machine_lacks_is_one_line_before_anything_is_written(command, tmp_path):
    result = run_cli(*command, "--task", "ctr-dlrm", "--profile", "smoke", "--out", str(tmp_path / "out"))
    device = command[command.index("--device") + 1]
    assert_user_error(result, f"--device {device}: device '{device}': ")
    assert not (tmp_path / "out").exists()


def test_several_processes_take_no_device(tmp_path):
    result = run_cli(
        *("train", "--task", "ctr-dlrm", "--framework", "jax", "--device", "cpu", "--nproc", "2"),
        *("--profile", "smoke", "--out", str(tmp_path / "out")),
    )
    assert_user_error(result, "--device cpu with --nproc 2 --nnodes 1: each rank computes on its own device")


def test_an_inference_run_on_the_named_device_records_it(tmp_path):
    result = run_cli(
        *("infer", "--task", "ctr-dlrm", "--framework", "jax", "--device", "cpu", "--scenario", "offline"),
        *("--mode", "performance", "--profile", "smoke", "--quiet", "--out", str(tmp_path / "out")),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads((tmp_path / "out" / "result.json").read_text())
    assert record["device"] == str(jax.local_devices(backend="cpu")[0])
    assert record["determinism"]["device"]["kind"] == "cpu"
