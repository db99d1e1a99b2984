"""System description: collection, schema, fingerprint, NVML (via tests/fakes/fake_pynvml.py), CLI.

.venv/bin/python -m pytest tests/test_sysinfo.py -q
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from levelfield.ground import sysinfo
from levelfield.ground.accelerators import accelerator_fields, cuda_version_text, query_nvml
from levelfield.ground.validation import problems

_FAKE_PATH = Path(__file__).parent / "fakes" / "fake_pynvml.py"
# Loaded by path (not `import fakes...`) so it works whatever tests/ package layout pytest sees.
_spec = importlib.util.spec_from_file_location("levelfield_tests_fake_pynvml", _FAKE_PATH)
fake_pynvml = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fake_pynvml  # dataclasses look their module up here
_spec.loader.exec_module(fake_pynvml)
FakeDevice = fake_pynvml.FakeDevice
GIB = 2**30

VENDOR_KEYS = {"submitter", "system_name", "division", "status", "system_type"}
FILLED = {
    "submitter": "Example Org",
    "system_name": "box-1",
    "division": "closed",
    "status": "available",
    "system_type": "datacenter",
}

CPUINFO_TWO_SOCKETS_HT = "\n\n".join(
    f"processor\t: {cpu}\nmodel name\t: AMD EPYC 7763 64-Core Processor\ncpu MHz\t\t: {2400 + cpu}.000\n"
    f"physical id\t: {socket}\ncore id\t\t: {core}\n"
    for cpu, (socket, core) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)] * 2)
)  # 2 threads per core


def fill(desc: dict) -> dict:
    return {**copy.deepcopy(desc), **FILLED}


@pytest.fixture(scope="module")
def generated() -> dict:
    return sysinfo.collect_system_description()


def nvml_report(devices, **kwargs) -> dict:
    fake = fake_pynvml.build(devices, **kwargs)
    return query_nvml(lambda name: fake)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "levelfield", "sysinfo", *map(str, args)], capture_output=True, text=True, timeout=120
    )


# ---- parsing ----


def test_parse_cpuinfo_counts_sockets_and_physical_cores_not_threads():
    cpu = sysinfo.parse_cpuinfo(CPUINFO_TWO_SOCKETS_HT)
    assert cpu == {
        "model_name": "AMD EPYC 7763 64-Core Processor",
        "sockets": 2,
        "cores_total": 4,
        "cores_per_socket": 2,
    }


def test_parse_cpuinfo_without_topology_reports_unknown():
    cpu = sysinfo.parse_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n")
    assert cpu == {"model_name": None, "sockets": None, "cores_total": None, "cores_per_socket": None}


def test_parse_meminfo_and_os_release():
    assert sysinfo.parse_meminfo_total_bytes("MemFree: 10 kB\nMemTotal:  16384 kB\n") == 16384 * 1024
    assert sysinfo.parse_meminfo_total_bytes("MemFree: 10 kB\n") is None
    assert sysinfo.parse_os_release_pretty_name('ID=debian\nPRETTY_NAME="Debian 12"\n') == "Debian 12"


def test_collect_host_reads_given_files(tmp_path):
    (tmp_path / "cpuinfo").write_text(CPUINFO_TWO_SOCKETS_HT)
    (tmp_path / "meminfo").write_text("MemTotal:       263856304 kB\n")
    (tmp_path / "os-release").write_text('PRETTY_NAME="Ubuntu 22.04.4 LTS"\n')
    host = sysinfo.collect_host(str(tmp_path / "cpuinfo"), str(tmp_path / "meminfo"), str(tmp_path / "os-release"))
    assert host["host_processor_model_name"] == "AMD EPYC 7763 64-Core Processor"
    assert (
        host["host_processors_per_node"],
        host["host_processor_core_count"],
        host["host_physical_cores_per_node"],
    ) == (2, 2, 4)
    assert host["host_memory_capacity_gib"] == 251.6  # 263856304 KiB / 2**20
    assert host["operating_system"] == "Ubuntu 22.04.4 LTS"


def test_undetected_cpu_model_becomes_a_placeholder(tmp_path, monkeypatch):
    monkeypatch.setattr(sysinfo.platform, "processor", lambda: "")
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nCPU part\t: 0xd0c\n")
    host = sysinfo.collect_host(str(tmp_path / "cpuinfo"))
    assert host["host_processor_model_name"].startswith("<FILL")
    assert host["host_processors_per_node"] == 1 and host["host_physical_cores_per_node"] >= 1


# ---- schema ----


def test_generated_description_fails_only_on_vendor_placeholders(generated):
    found = problems(generated, "system")
    assert {line.split(":")[0] for line in found} == {f"$.{k}" for k in VENDOR_KEYS}
    assert all("placeholder not filled in: '<FILL" in line for line in found)
    assert set(sysinfo.placeholder_paths(generated)) == {f"$.{k}" for k in VENDOR_KEYS}


def test_filled_description_is_valid(generated):
    assert sysinfo.description_problems(fill(generated)) == []


def test_missing_required_key_is_named(generated):
    desc = fill(generated)
    del desc["submitter"]
    assert sysinfo.description_problems(desc) == ["$: missing required key 'submitter'"]


def test_mistyped_value_names_path_expected_and_found(generated):
    desc = fill(generated)
    desc["host_memory_capacity_gib"] = "lots"
    assert sysinfo.description_problems(desc) == ["$.host_memory_capacity_gib: expected number, got 'lots'"]


def test_enum_unknown_key_and_negative_number_are_rejected(generated):
    desc = {**fill(generated), "division": "closeed", "hourly_price_usd": -1, "colour": "red"}
    found = sysinfo.description_problems(desc)
    assert "$.division: expected one of 'closed', 'open'; got 'closeed'" in found
    assert "$.hourly_price_usd: expected a value >= 0, got -1" in found
    assert any(line.startswith("$: unknown key 'colour'") for line in found)


def test_optional_vendor_fields_are_accepted(generated):
    desc = {
        **fill(generated),
        "hourly_price_usd": 3.06,
        "notes": "spot instance",
        "other_software_stack": {"cudnn": "9.1.0"},
    }
    assert sysinfo.description_problems(desc) == []


# ---- fingerprint ----


def test_fingerprint_is_stable_across_collections(generated):
    again = sysinfo.collect_system_description()
    assert again["fingerprint"] == generated["fingerprint"]


def test_digest_is_sha256_of_canonical_json(generated):
    body = {k: v for k, v in generated["fingerprint"].items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    assert generated["fingerprint"]["digest"] == hashlib.sha256(canonical).hexdigest()


def test_fingerprint_ignores_volatile_fields_and_follows_hardware(generated):
    base_desc = {**copy.deepcopy(generated), "host_memory_capacity_gib": 23.6}
    base = sysinfo.fingerprint(base_desc)["digest"]
    volatile = copy.deepcopy(base_desc)
    volatile["software"]["numpy"] = "0.0.1"
    volatile["generated_at"] = "1999-01-01T00:00:00+00:00"
    volatile["host_memory_capacity_gib"] = 23.9  # same whole GiB (24): a kernel reserving less memory
    assert sysinfo.fingerprint(volatile)["digest"] == base
    assert sysinfo.fingerprint({**base_desc, "host_processor_model_name": "Some Other CPU"})["digest"] != base
    assert sysinfo.fingerprint({**base_desc, "host_memory_capacity_gib": 31.6})["digest"] != base


def test_fingerprint_differences_lists_changed_keys(generated):
    declared = generated["fingerprint"]
    observed = sysinfo.fingerprint({**generated, "host_threads_per_node": 999})
    assert sysinfo.fingerprint_differences(declared, observed) == [
        f"host_threads_per_node: declared {generated['host_threads_per_node']}, observed 999"
    ]
    assert sysinfo.fingerprint_differences(declared, declared) == []


def test_tampered_fingerprint_and_edited_hardware_are_detected(generated):
    tampered = fill(generated)
    tampered["fingerprint"]["host_threads_per_node"] += 1
    found = sysinfo.description_problems(tampered)
    assert any(line.startswith("$.fingerprint.digest: does not match") for line in found)
    edited = fill(generated)
    edited["host_processor_model_name"] = "Faster CPU 9000"
    found = sysinfo.description_problems(edited)
    assert any(line.startswith("$.fingerprint.host_processor_model_name: expected 'Faster CPU 9000'") for line in found)


# ---- NVML ----

TWO_GPUS = [
    FakeDevice("NVIDIA H100 80GB HBM3", 80 * GIB, 700_000),
    FakeDevice("NVIDIA H100 80GB HBM3", 80 * GIB, 700_000),
]


def test_fake_nvml_with_two_devices():
    fake = fake_pynvml.build(TWO_GPUS, driver_version="550.54.15", cuda_driver_version=12040)
    report = query_nvml(lambda name: fake)
    assert report["devices"] == [
        {"index": 0, "model_name": "NVIDIA H100 80GB HBM3", "memory_capacity_gib": 80.0, "power_limit_w": 700.0},
        {"index": 1, "model_name": "NVIDIA H100 80GB HBM3", "memory_capacity_gib": 80.0, "power_limit_w": 700.0},
    ]
    assert (report["driver_version"], report["cuda_driver_version"]) == ("550.54.15", "12.4")
    assert fake.calls == ["nvmlInit", "nvmlShutdown"]
    desc = fill(sysinfo.collect_system_description(nvml_report=report))
    assert (desc["accelerators_per_node"], desc["accelerator_model_name"], desc["accelerator_memory_capacity_gib"]) == (
        2,
        "NVIDIA H100 80GB HBM3",
        80.0,
    )
    assert (desc["software"]["nvidia_driver"], desc["software"]["cuda_driver"]) == ("550.54.15", "12.4")
    assert (
        desc["fingerprint"]["accelerators"] == [{"model_name": "NVIDIA H100 80GB HBM3", "memory_capacity_gib": 80}] * 2
    )
    assert sysinfo.description_problems(desc) == []


def test_fake_nvml_returning_bytes_and_unsupported_power():
    report = nvml_report(
        [FakeDevice("Tesla V100-SXM2-16GB", 16 * GIB, None)],
        driver_version="418.67",
        cuda_driver_version=10010,
        as_bytes=True,
    )
    assert report["devices"][0]["model_name"] == "Tesla V100-SXM2-16GB"
    assert report["devices"][0]["power_limit_w"] is None
    assert (report["driver_version"], report["cuda_driver_version"]) == ("418.67", "10.1")
    desc = fill(sysinfo.collect_system_description(nvml_report=report))
    assert sysinfo.description_problems(desc) == []


def test_mixed_models_join_names_and_take_smallest_memory():
    report = nvml_report(
        [FakeDevice("NVIDIA A100-SXM4-80GB", 80 * GIB, 400_000), FakeDevice("NVIDIA A100-SXM4-40GB", 40 * GIB, 400_000)]
    )
    fields = accelerator_fields(report)
    assert fields["accelerator_model_name"] == "NVIDIA A100-SXM4-80GB + NVIDIA A100-SXM4-40GB"
    assert fields["accelerator_memory_capacity_gib"] == 40.0


def test_nvml_init_failure_means_no_accelerator():
    fake = fake_pynvml.build(TWO_GPUS, init_error="Driver Not Loaded")
    report = query_nvml(lambda name: fake)
    assert report["devices"] == [] and "Driver Not Loaded" in report["unavailable_reason"]
    assert accelerator_fields(report) == {
        "accelerators_per_node": 0,
        "accelerator_model_name": "none",
        "accelerator_memory_capacity_gib": 0,
        "accelerators": [],
    }
    assert "nvmlShutdown" not in fake.calls  # shutting down an NVML that never started raises


def test_missing_pynvml_means_no_accelerator():
    def no_module(name):
        raise ModuleNotFoundError(f"No module named {name!r}")

    report = query_nvml(no_module)
    assert report["devices"] == [] and "pynvml not importable" in report["unavailable_reason"]


def test_cuda_version_text():
    assert [cuda_version_text(v) for v in (12040, 11080, 12000)] == ["12.4", "11.8", "12.0"]


# ---- CLI ----


def test_cli_prints_json_to_stdout():
    result = run_cli()
    assert result.returncode == 0, result.stderr
    assert set(json.loads(result.stdout)) >= {"fingerprint", "submitter", "software"}


def test_cli_writes_file_and_refuses_to_overwrite(tmp_path):
    out = tmp_path / "systems" / "box.json"
    first = run_cli("--out", out)
    assert first.returncode == 0, first.stderr
    assert json.loads(out.read_text()) == json.loads(first.stdout)
    assert "fill in $.submitter" in first.stderr
    out.write_text(out.read_text().replace("<FILL: organization submitting the results>", "Example Org"))
    edited = out.read_text()
    second = run_cli("--out", out)
    assert second.returncode == 2
    assert f"levelfield: error: {out}: already exists" in second.stderr and "--force" in second.stderr
    assert out.read_text() == edited
    forced = run_cli("--out", out, "--force")
    assert forced.returncode == 0 and "Example Org" not in out.read_text()


def test_cli_check_good_and_bad_files(tmp_path, generated):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(fill(generated)))
    result = run_cli("--check", good)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{good}: valid system description"

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**fill(generated), "host_memory_capacity_gib": "lots", "status": "<FILL: x>"}))
    result = run_cli("--check", bad)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "replace each '<FILL" in result.stderr
    assert f"levelfield: error: {bad}: $.host_memory_capacity_gib: expected number, got 'lots'" in result.stderr
    assert f"levelfield: error: {bad}: $.status: placeholder not filled in: '<FILL: x>'" in result.stderr


def test_cli_check_detects_tampered_fingerprint(tmp_path, generated):
    desc = fill(generated)
    desc["fingerprint"]["host_memory_capacity_gib"] += 64
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(desc))
    result = run_cli("--check", path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{path}: $.fingerprint.digest: does not match" in result.stderr
    assert "regenerate" in result.stderr


def test_cli_check_unreadable_and_invalid_json(tmp_path):
    missing = run_cli("--check", tmp_path / "nope.json")
    assert missing.returncode == 2 and "file not found" in missing.stderr and "Traceback" not in missing.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    result = run_cli("--check", broken)
    assert result.returncode == 2 and f"{broken}:1: invalid JSON" in result.stderr


def test_cli_force_without_out_is_an_error():
    assert "--force only applies to --out" in run_cli("--force").stderr


def test_accelerator_summary_must_match_the_accelerator_list(generated):
    desc = fill(copy.deepcopy(generated))
    desc["accelerator_model_name"] = "NVIDIA H100 80GB HBM3"  # edited, while the observed list says otherwise
    found = sysinfo.description_problems(desc)
    assert any(line.startswith("$.accelerator_model_name: expected") for line in found), found


def test_cli_set_fills_vendor_fields_and_refuses_other_keys(tmp_path):
    out = tmp_path / "box.json"
    done = run_cli(
        "--out",
        str(out),
        "--set",
        "submitter=acme",
        "--set",
        "division=closed",
        "--set",
        "status=available",
        "--set",
        "system_type=edge",
        "--set",
        "system_name=Acme box",
    )
    assert done.returncode == 0, done.stderr
    assert sysinfo.description_problems(json.loads(out.read_text())) == []
    refused = run_cli("--set", "host_memory_capacity_gib=1024")
    assert refused.returncode == 2 and "expected FIELD=VALUE with FIELD one of submitter" in refused.stderr
