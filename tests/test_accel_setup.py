"""Which framework builds `make setup` installs: detected with a fake `nvidia-smi`, or chosen with ACCEL.

Nothing is installed: `make -n` prints the setup recipe for a virtual environment that does not exist
yet and the tests read its pip commands, or the recipe runs with a stub python that records them.
The fakes stand in for the three machines the detection tells apart: a GPU that `nvidia-smi -L`
lists, a driver without a device (nvidia-smi fails), and no nvidia-smi at all. The CUDA install
itself has not run here (no GPU; README, Development).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="GNU make is not installed")

# The lock first, checked against its hashes (docs/packaging.md, The lock file); then the frameworks by
# version and levelfield, constrained to the lock's versions (PINS: the lock without its hashes, written into
# the venv by the recipe).
PINS = "{venv}/lock-pins.txt"
LOCKED = ["--require-hashes", "--no-deps", "-r", "requirements.lock"]
# CPU: the CPU torch wheel (by version: a local find-links holds it), JAX and tensorflow-cpu, then every extra.
CPU_INSTALLS = [
    LOCKED,
    ["-c", PINS, "torch==2.13.0", "jax==0.10.2", "tensorflow-cpu==2.21.0", "onnxruntime==1.31.1"],
    ["-c", PINS, "-e", ".[all,dev]"],
]
# TensorFlow's CUDA 12 build first, then torch's and JAX's CUDA 13 builds (they win the NCCL and cuDNN
# paths both write), ONNX Runtime's CUDA build, then the extras without `tensorflow` (it names tensorflow-cpu)
# and `onnxruntime` (its CPU wheel).
CUDA_INSTALLS = [
    LOCKED,
    ["-c", PINS, "tensorflow[and-cuda]==2.21.0"],
    ["-c", PINS, "torch==2.13.0", "jax[cuda13]==0.10.2", "onnxruntime-gpu==1.31.1"],
    ["-c", PINS, "-e", ".[pytorch,jax,gpu,dev]"],
]


def expected(installs: list[list[str]], tmp_path: Path) -> list[list[str]]:
    """`installs` with the venv make was given (VENV=<tmp>/venv) in the pins' path."""
    venv = str(tmp_path / "venv")
    return [[word.format(venv=venv) for word in words] for words in installs]


GPU_LISTED = """#!/bin/sh
[ "$1" = -L ] || exit 2
echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-6a1b1f5e-0c1d-4d7e-9a43-2b1e8f0c9d11)'
"""
# A driver with no device: what nvidia-smi prints on such a machine, and its exit status.
NO_DEVICE = """#!/bin/sh
echo 'No devices were found'
exit 6
"""
NO_DRIVER = """#!/bin/sh
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
exit 9
"""
# Lists a GPU but fails: not a machine that runs CUDA.
LISTED_BUT_FAILED = GPU_LISTED + "exit 3\n"


def environment(tmp_path: Path, fake: str | None) -> dict[str, str]:
    """This process's environment with `fake` as the only nvidia-smi on PATH (none when `fake` is None).

    ACCEL and make's own variables are dropped: a `make test ACCEL=cuda` above would pass ACCEL down
    through MAKEFLAGS.
    """
    drop = {"ACCEL", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    dirs = [d for d in env.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "nvidia-smi").exists()]
    if fake is not None:
        bin_dir = tmp_path / "fake-bin"
        bin_dir.mkdir()
        script = bin_dir / "nvidia-smi"
        script.write_text(fake)
        script.chmod(0o755)
        dirs.insert(0, str(bin_dir))
    env["PATH"] = os.pathsep.join(dirs)
    return env


def make(tmp_path: Path, *args: str, fake: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """`make VENV=<tmp>/venv ARGS` in the repository, with `fake` as nvidia-smi and `env` added."""
    return subprocess.run(
        [MAKE, f"VENV={tmp_path / 'venv'}", *args],
        cwd=REPO,
        env={**environment(tmp_path, fake), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def planned(
    tmp_path: Path, *args: str, fake: str | None = None, env: dict | None = None
) -> tuple[list[list[str]], str]:
    """The pip installs `make setup` would run into a fresh venv (pip's own upgrade left out), and the
    whole recipe as make prints it."""
    done = make(tmp_path, "-n", str(tmp_path / "venv" / ".levelfield-installed"), *args, fake=fake, env=env)
    assert done.returncode == 0, done.stderr
    installs = []
    for line in done.stdout.splitlines():
        if " -m pip install " not in line:
            continue
        words = shlex.split(line)
        if words[1:4] == ["-m", "pip", "install"] and words[4:] != ["--quiet", "--upgrade", "pip"]:
            installs.append(words[4:])
    return installs, done.stdout


@pytest.mark.parametrize(
    ("fake", "installs", "reason"),
    [
        (GPU_LISTED, CUDA_INSTALLS, "ACCEL=cuda (detected: nvidia-smi -L lists a GPU)"),
        (NO_DEVICE, CPU_INSTALLS, "ACCEL=cpu (detected: no nvidia-smi -L that lists a GPU)"),
        (NO_DRIVER, CPU_INSTALLS, "ACCEL=cpu (detected: no nvidia-smi -L that lists a GPU)"),
        (LISTED_BUT_FAILED, CPU_INSTALLS, "ACCEL=cpu (detected: no nvidia-smi -L that lists a GPU)"),
        (None, CPU_INSTALLS, "ACCEL=cpu (detected: no nvidia-smi -L that lists a GPU)"),
    ],
    ids=["gpu-listed", "driver-no-device", "no-driver", "listed-but-failed", "no-nvidia-smi"],
)
def test_detection_picks_the_builds(tmp_path, fake, installs, reason):
    found, recipe = planned(tmp_path, fake=fake)
    assert found == expected(installs, tmp_path)
    assert f'echo "levelfield setup: {reason}"' in recipe  # printed to the user as setup starts


@pytest.mark.parametrize(
    ("accel", "fake", "installs"),
    [("cpu", GPU_LISTED, CPU_INSTALLS), ("cuda", None, CUDA_INSTALLS), ("cuda", NO_DEVICE, CUDA_INSTALLS)],
    ids=["cpu-on-a-gpu-machine", "cuda-without-nvidia-smi", "cuda-without-a-device"],
)
def test_accel_overrides_detection(tmp_path, accel, fake, installs):
    found, recipe = planned(tmp_path, f"ACCEL={accel}", fake=fake)
    assert found == expected(installs, tmp_path)
    assert f'echo "levelfield setup: ACCEL={accel} (given)"' in recipe


def test_accel_from_the_environment_counts_as_given(tmp_path):
    found, recipe = planned(tmp_path, fake=NO_DEVICE, env={"ACCEL": "cuda"})
    assert found == expected(CUDA_INSTALLS, tmp_path)
    assert 'echo "levelfield setup: ACCEL=cuda (given)"' in recipe


@pytest.mark.parametrize(
    ("fake", "installs", "reason"),
    [
        (None, CPU_INSTALLS, "cpu\n(detected: no nvidia-smi -L that lists a GPU)"),
        (GPU_LISTED, CUDA_INSTALLS, "cuda\n(detected: nvidia-smi -L lists a GPU)"),
    ],
    ids=["cpu", "cuda"],
)
def test_setup_runs_the_planned_installs_and_stamps_the_choice(tmp_path, fake, installs, reason):
    """The recipe really runs, through the shell, with a stub python that records its arguments."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    calls = tmp_path / "calls.jsonl"
    stub = venv / "bin" / "python"
    stub.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"with open({str(calls)!r}, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    stub.chmod(0o755)
    done = make(tmp_path, str(venv / ".levelfield-installed"), f"PYTHON={stub}", fake=fake)
    assert done.returncode == 0, done.stderr
    accel, why = reason.split("\n")
    assert done.stdout.splitlines()[0] == f"levelfield setup: ACCEL={accel} {why}"
    recorded = [json.loads(line) for line in calls.read_text().splitlines()]
    assert recorded[:2] == [["-m", "venv", str(venv)], ["-m", "pip", "install", "--quiet", "--upgrade", "pip"]]
    assert recorded[2:] == [["-m", "pip", "install", *args] for args in expected(installs, tmp_path)] + [
        ["-m", "pip", "check"]
    ]
    # The pins the frameworks install under: every locked name==version, no hash, no comment.
    pins = (venv / "lock-pins.txt").read_text().splitlines()
    lines = (REPO / "requirements.lock").read_text().splitlines()
    assert pins == [line.split()[0] for line in lines if line[:1].isalnum()]
    assert pins and all(re.fullmatch(r"[a-z0-9][a-z0-9._-]*==[^\s=]+", p) for p in pins)
    assert (venv / ".levelfield-installed").read_text() == f"ACCEL={reason}\n"


@pytest.mark.parametrize("value", ["rocm", "CUDA", "gpu"])
def test_a_bad_accel_is_one_line_naming_it(tmp_path, value):
    done = make(tmp_path, "-n", "setup", f"ACCEL={value}")
    assert done.returncode != 0
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert f"ACCEL={value}: expected ACCEL=cuda or ACCEL=cpu" in line


def stamped(tmp_path: Path, text: str) -> Path:
    """A venv stamp holding `text`, newer than what it depends on, so make runs only the check."""
    stamp = tmp_path / "venv" / ".levelfield-installed"
    stamp.parent.mkdir()
    stamp.write_text(text)
    newer = max((REPO / name).stat().st_mtime for name in ("pyproject.toml", "setup.cfg", "requirements.lock")) + 3600
    os.utime(stamp, (newer, newer))
    return stamp


@pytest.mark.parametrize(
    ("held", "accel", "refused"), [("cpu", "cuda", True), ("cuda", "cpu", True), ("cpu", "cpu", False)]
)
def test_a_venv_set_up_for_the_other_accel_is_refused(tmp_path, held, accel, refused):
    """pip would keep the builds the venv holds: switching needs `make clean`, and make says so."""
    stamp = stamped(tmp_path, f"ACCEL={held}\n(given)\n")
    done = make(tmp_path, str(stamp), f"ACCEL={accel}")
    assert (done.returncode != 0) == refused, done.stderr
    assert (f"holds the {held} builds, not ACCEL={accel}'s: run make clean first" in done.stderr) == refused
    assert "pip install" not in done.stdout


@pytest.mark.parametrize(("accel", "refused"), [("cuda", True), ("cpu", False)])
def test_a_venv_from_before_the_selection_holds_the_cpu_builds(tmp_path, accel, refused):
    """Stamps written before ACCEL existed are empty; those venvs hold the CPU builds of JAX and TensorFlow."""
    stamp = stamped(tmp_path, "")
    done = make(tmp_path, str(stamp), f"ACCEL={accel}")
    assert (done.returncode != 0) == refused, done.stderr
    assert ("holds the cpu builds, not ACCEL=cuda's" in done.stderr) == refused
