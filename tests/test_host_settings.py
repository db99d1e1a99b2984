"""The environment record's new parts: the host's settings (levelfield/ground/host_settings.py), the GPUs'
(accelerators.gpu_settings, against tests/fakes/fake_pynvml.py), every installed distribution and its digest
(environment.py). Fake sysfs trees in a temporary folder stand for the files this VM lacks (cpufreq,
intel_pstate); the real sysfs is read where it is present.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest
from test_trainer_gpu import FakeDevice, fake_pynvml, importer

from levelfield.ground.accelerators import NOT_EXPOSED, query_gpu_settings
from levelfield.ground.environment import (
    digested_fields,
    distributions_digest,
    environment_fingerprint,
    installed_distributions,
)
from levelfield.ground.host_settings import CONTAINER_IMAGE_ENV, container, host_settings
from levelfield.ground.validation import problems

CPU = Path("/sys/devices/system/cpu")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


@pytest.fixture
def fake_host(tmp_path) -> tuple[Path, Path]:
    """(sys, proc) of a 4-CPU, 2-node host with intel_pstate, turbo off, SMT on, mixed governors."""
    sys_root, proc = tmp_path / "sys", tmp_path / "proc"
    cpu = sys_root / "devices" / "system" / "cpu"
    for n, governor in enumerate(["performance", "performance", "powersave", "powersave"]):
        write(cpu / f"cpu{n}" / "cpufreq" / "scaling_governor", governor)
        write(cpu / f"cpu{n}" / "cpufreq" / "scaling_driver", "intel_pstate")
    write(cpu / "intel_pstate" / "no_turbo", "1")
    write(cpu / "smt" / "active", "1")
    write(cpu / "smt" / "control", "on")
    write(sys_root / "devices" / "system" / "node" / "node0" / "cpulist", "0-1")
    write(sys_root / "devices" / "system" / "node" / "node1" / "cpulist", "2-3")
    write(proc / "cpuinfo", "\n".join(f"processor\t: {n}\nmicrocode\t: 0x2b000603\n" for n in range(4)))
    write(proc / "sys" / "kernel" / "osrelease", "6.8.0-49-generic")
    return sys_root, proc


def test_the_host_settings_of_a_fake_sysfs(fake_host, tmp_path):
    sys_root, proc = fake_host
    settings = host_settings(sys_root, proc, tmp_path / "run", tmp_path / "root")
    assert settings["kernel"] == "6.8.0-49-generic"
    assert settings["cpu"] == {
        "governor": "performance, powersave",  # the CPUs differ: both are recorded
        "scaling_driver": "intel_pstate",
        "energy_performance_preference": NOT_EXPOSED,
        "boost": False,  # intel_pstate's no_turbo 1
        "smt": {"active": True, "control": "on"},
        "microcode": "0x2b000603",
    }
    assert settings["numa"] == [{"node": 0, "cpus": "0-1"}, {"node": 1, "cpus": "2-3"}]
    assert settings["container"] == {"inside": False}


def test_an_empty_sysfs_exposes_nothing_and_guesses_nothing(tmp_path):
    settings = host_settings(tmp_path / "sys", tmp_path / "proc", tmp_path / "run", tmp_path / "root")
    cpu = settings["cpu"]
    assert {cpu[k] for k in ("governor", "scaling_driver", "boost", "microcode")} == {NOT_EXPOSED}
    assert cpu["smt"] == {"active": NOT_EXPOSED, "control": NOT_EXPOSED} and settings["numa"] == NOT_EXPOSED


def test_the_real_sysfs_as_it_is():
    """This VM has no cpufreq folder: "not exposed"; a host that has one records its governor."""
    settings = host_settings()
    governor = CPU / "cpu0" / "cpufreq" / "scaling_governor"
    if governor.exists():
        assert governor.read_text().strip() in settings["cpu"]["governor"]
    else:
        assert settings["cpu"]["governor"] == NOT_EXPOSED
    smt = CPU / "smt" / "active"
    if smt.exists():
        assert settings["cpu"]["smt"]["active"] == (smt.read_text().strip() == "1")
    assert settings["kernel"] == Path("/proc/sys/kernel/osrelease").read_text().strip()


def test_the_container_and_its_image_where_the_runtime_tells_it(tmp_path):
    run, root = tmp_path / "run", tmp_path / "root"
    root.mkdir()
    assert container(root, run, {}) == {"inside": False}
    (root / ".dockerenv").write_text("")
    assert container(root, run, {}) == {"inside": True, "runtime": "docker", "image_id": NOT_EXPOSED}
    assert container(root, run, {CONTAINER_IMAGE_ENV: "sha256:ab12"})["image_id"] == "sha256:ab12"
    write(run / ".containerenv", 'engine="podman-4.9.3"\nimage="docker.io/library/python:3.11"\nimageid="c0ffee"')
    assert container(root, run, {}) == {
        "inside": True,
        "runtime": "podman-4.9.3",
        "image": "docker.io/library/python:3.11",
        "image_id": "c0ffee",
    }


def test_the_gpus_settings_from_nvml_and_what_a_board_does_not_expose():
    full = FakeDevice("NVIDIA H200", 141 * 2**30, 700_000, uuid="GPU-aaaa")
    bare = FakeDevice("NVIDIA T4", 16 * 2**30, None, uuid="GPU-bbbb", application_clocks_mhz=None, ecc=None)
    first, second = query_gpu_settings(importer(fake_pynvml.build([full, bare])))
    assert first == {
        "index": 0,
        "uuid": "GPU-aaaa",
        "application_clocks_mhz": {"graphics": 1755, "sm": 1755, "memory": 2619},
        "power_limit_w": 700.0,
        "ecc": {"current": True, "pending": True},
        "persistence_mode": True,
        "clocks_mhz": {"graphics": 1980, "sm": 1980, "memory": 2619},
    }
    assert second["application_clocks_mhz"] == {"graphics": NOT_EXPOSED, "sm": NOT_EXPOSED, "memory": NOT_EXPOSED}
    assert second["power_limit_w"] == NOT_EXPOSED and second["ecc"] == NOT_EXPOSED

    def missing(name):
        raise ImportError("No module named 'pynvml'")

    assert query_gpu_settings(missing) == NOT_EXPOSED


def test_every_installed_distribution_is_listed_with_a_digest_of_the_list():
    listed = installed_distributions()
    assert listed["numpy"] == importlib.metadata.version("numpy")
    assert listed["mlcommons-loadgen"] == importlib.metadata.version("mlcommons-loadgen")  # PEP 503 names
    assert len(listed) > 20 and list(listed) == sorted(listed)
    assert distributions_digest(listed) != distributions_digest({**listed, "numpy": "0.0.1"})
    env = environment_fingerprint("jax")
    assert env["distributions_digest"] == distributions_digest(env["distributions"])
    assert problems(json.loads(json.dumps(env)), "environment") == []


def test_a_folder_added_to_sys_path_while_running_adds_no_distribution(tmp_path, monkeypatch):
    """Importing setuptools puts its vendored distributions on sys.path (torch.compile does it in inference,
    not in training): one environment must list the same distributions before and after."""
    before = installed_distributions()
    vendored = tmp_path / "_vendor"
    write(
        vendored / "jaraco_text-4.0.0.dist-info" / "METADATA",
        "Metadata-Version: 2.1\nName: jaraco.text\nVersion: 4.0.0",
    )
    monkeypatch.syspath_prepend(str(vendored))
    assert importlib.metadata.version("jaraco.text") == "4.0.0"  # what importlib.metadata alone would list
    assert installed_distributions() == before
    monkeypatch.setenv("PYTHONPATH", str(vendored))  # a folder the interpreter starts with is part of it
    assert installed_distributions() == {**before, "jaraco-text": "4.0.0"}


def test_a_gpus_clocks_of_the_moment_stay_outside_the_digest():
    gpu = {"index": 0, "power_limit_w": 700.0, "clocks_mhz": {"graphics": 1980, "sm": 1980, "memory": 2619}}
    env = {"python": "3.11", "host": {"kernel": "6.8", "gpus": [gpu]}}
    slower = {
        **env,
        "host": {**env["host"], "gpus": [{**gpu, "clocks_mhz": {"graphics": 1410, "sm": 1410, "memory": 2619}}]},
    }
    capped = {**env, "host": {**env["host"], "gpus": [{**gpu, "power_limit_w": 300.0}]}}
    assert digested_fields(slower) == digested_fields(env) != digested_fields(capped)
