"""The host's settings that change how fast the same hardware runs: CPU frequency policy, SMT, microcode,
kernel, NUMA layout, and the container a run is inside. Read from sysfs and /proc; nothing is guessed.

    python -c "from levelfield.ground.host_settings import host_settings; print(host_settings())"

Each run's environment record carries them (environment.py), so two results measured under another
frequency governor, with turbo off or SMT on, can be told apart, and the checker holds the runs of one
result to one set (REP001) and to the system description (SYS011). A file the kernel does not expose (no
`cpufreq` folder in most VMs, `energy_performance_preference` on few drivers) is recorded as NOT_EXPOSED,
never as a default value.

The roots are parameters so that tests can point the reader at a fake tree; the defaults are the real ones.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

from levelfield.ground.accelerators import NOT_EXPOSED

SYS = Path("/sys")
PROC = Path("/proc")
RUN = Path("/run")
ROOT = Path("/")
# A user can name the image a container was started from, which Docker does not tell the container:
# `docker run -e LEVELFIELD_CONTAINER_IMAGE=$(docker inspect --format '{{.Image}}' IMAGE) ...`.
CONTAINER_IMAGE_ENV = "LEVELFIELD_CONTAINER_IMAGE"
_NODE = re.compile(r"node(\d+)")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _cpus(sys_root: Path) -> list[Path]:
    folder = sys_root / "devices" / "system" / "cpu"
    try:
        return sorted((p for p in folder.iterdir() if re.fullmatch(r"cpu\d+", p.name)), key=lambda p: int(p.name[3:]))
    except OSError:
        return []


def _per_cpu(sys_root: Path, name: str) -> str:
    """One cpufreq file over every CPU: its value, the distinct values joined with ", " when CPUs differ, or
    NOT_EXPOSED when no CPU has it."""
    values = [_read(cpu / "cpufreq" / name) for cpu in _cpus(sys_root)]
    found = sorted({v for v in values if v})
    return ", ".join(found) if found else NOT_EXPOSED


def boost(sys_root: Path) -> bool | str:
    """Whether the CPU may run above its base clock (turbo, boost): cpufreq's global `boost` (acpi-cpufreq,
    amd-pstate), else intel_pstate's `no_turbo` (inverted)."""
    cpu = sys_root / "devices" / "system" / "cpu"
    value = _read(cpu / "cpufreq" / "boost")
    if value in ("0", "1"):
        return value == "1"
    value = _read(cpu / "intel_pstate" / "no_turbo")
    if value in ("0", "1"):
        return value == "0"
    return NOT_EXPOSED


def smt(sys_root: Path) -> dict:
    """SMT (hyper-threading): whether sibling threads are running, and the kernel's control word
    (on, off, forceoff, notsupported, notimplemented)."""
    folder = sys_root / "devices" / "system" / "cpu" / "smt"
    active = _read(folder / "active")
    return {
        "active": active == "1" if active in ("0", "1") else NOT_EXPOSED,
        "control": _read(folder / "control") or NOT_EXPOSED,
    }


def microcode(proc_root: Path) -> str:
    """The CPU microcode revision(s) /proc/cpuinfo reports, distinct values joined with ", "."""
    text = _read(proc_root / "cpuinfo") or ""
    found = sorted({line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("microcode")})
    return ", ".join(found) if found else NOT_EXPOSED


def numa(sys_root: Path) -> list[dict] | str:
    """The NUMA nodes with the CPUs of each (the kernel's cpulist, e.g. "0-15,32-47")."""
    folder = sys_root / "devices" / "system" / "node"
    try:
        nodes = sorted(int(m.group(1)) for p in folder.iterdir() if (m := _NODE.fullmatch(p.name)))
    except OSError:
        return NOT_EXPOSED
    return [{"node": n, "cpus": _read(folder / f"node{n}" / "cpulist") or NOT_EXPOSED} for n in nodes] or NOT_EXPOSED


def _containerenv(run_root: Path) -> dict:
    """Podman's /run/.containerenv: key="value" lines (filled in by rootful podman)."""
    fields = {}
    for line in (_read(run_root / ".containerenv") or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip('"')
    return fields


def container(root: Path = ROOT, run_root: Path = RUN, environ: dict | os._Environ = os.environ) -> dict:
    """Whether this process runs in a container, which kind, and the image's id where the runtime tells
    it (podman; any runtime through $LEVELFIELD_CONTAINER_IMAGE); NOT_EXPOSED where it does not (Docker)."""
    image = environ.get(CONTAINER_IMAGE_ENV) or NOT_EXPOSED
    if (run_root / ".containerenv").exists():
        fields = _containerenv(run_root)
        return {
            "inside": True,
            "runtime": fields.get("engine") or "podman",
            "image": fields.get("image") or NOT_EXPOSED,
            "image_id": environ.get(CONTAINER_IMAGE_ENV) or fields.get("imageid") or NOT_EXPOSED,
        }
    for name in ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER"):
        if environ.get(name):  # the image file the container runs from
            return {"inside": True, "runtime": name.split("_")[0].lower(), "image": environ[name], "image_id": image}
    if (root / ".dockerenv").exists():  # Docker tells a container its own id (changes per start), not its image's
        return {"inside": True, "runtime": "docker", "image_id": image}
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return {"inside": True, "runtime": "kubernetes", "image_id": image}
    return {"inside": False}


def host_settings(sys_root: Path = SYS, proc_root: Path = PROC, run_root: Path = RUN, root: Path = ROOT) -> dict:
    """The settings above, as each run's environment record holds them under "host"."""
    return {
        "kernel": _read(proc_root / "sys" / "kernel" / "osrelease") or platform.release(),
        "cpu": {
            "governor": _per_cpu(sys_root, "scaling_governor"),
            "scaling_driver": _per_cpu(sys_root, "scaling_driver"),
            "energy_performance_preference": _per_cpu(sys_root, "energy_performance_preference"),
            "boost": boost(sys_root),
            "smt": smt(sys_root),
            "microcode": microcode(proc_root),
        },
        "numa": numa(sys_root),
        "container": container(root, run_root),
    }
