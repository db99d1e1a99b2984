"""The system description: what a submission ran on, observed here, declared by the vendor.

    levelfield sysinfo --out systems/my-box.json   # then fill in the <FILL: ...> fields
    levelfield sysinfo --check systems/my-box.json

    from levelfield.ground.sysinfo import collect_system_description, fingerprint
    observed = fingerprint(collect_system_description())   # what logs embed

Hardware and software facts are read from the machine (/proc, /etc/os-release,
NVML, installed distribution metadata; no framework is imported). Facts only the
vendor knows (submitter, system name, division, availability, system type) are
written as `<FILL: ...>` placeholders that the schema rejects until replaced.

The `fingerprint` is the stable hardware/OS subset plus its SHA-256 `digest`.
Training and inference logs embed the fingerprint of the machine they ran on;
the checker compares it with the one declared in `systems/<system>.json`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from levelfield import __version__
from levelfield.ground.accelerators import accelerator_fields, query_nvml

SCHEMA_VERSION = "1.0"
_BYTES_PER_GIB = 2**30
_BYTES_PER_KIB = 1024

# software key -> distributions that provide it, first installed one wins.
SOFTWARE_DISTRIBUTIONS = {
    "numpy": ["numpy"],
    "torch": ["torch"],
    "tensorflow": ["tensorflow", "tensorflow-cpu"],
    "jax": ["jax"],
    "jaxlib": ["jaxlib"],
    "flax": ["flax"],
    "optax": ["optax"],
    "onnxruntime": ["onnxruntime", "onnxruntime-gpu"],
    "onnx": ["onnx"],
    "mlcommons_loadgen": ["mlcommons-loadgen"],
    "mlperf_logging": ["mlperf-logging"],
    "nvidia_ml_py": ["nvidia-ml-py"],
}

# Fields only the vendor can state; the schema rejects these strings until replaced.
VENDOR_PLACEHOLDERS = {
    "submitter": "<FILL: organization submitting the results>",
    "system_name": "<FILL: system name as it should appear in result tables>",
    "division": "<FILL: closed or open>",
    "status": "<FILL: available, preview or rdi>",
    "system_type": "<FILL: datacenter or edge>",
}

# Description keys that make up the fingerprint (stable across runs and reboots).
# Memory and accelerators enter in whole GiB (see fingerprint_content).
FINGERPRINT_KEYS = [
    "host_processor_model_name",
    "host_processors_per_node",
    "host_physical_cores_per_node",
    "host_threads_per_node",
    "host_memory_capacity_gib",
    "machine_architecture",
    "operating_system",
    "kernel_version",
    "accelerators_per_node",
    "accelerators",
]


# ---- parsing (pure functions over file text) ---------------------------------


def parse_cpuinfo(text: str) -> dict:
    """Model name, sockets and physical cores from /proc/cpuinfo text.

    Returns {"model_name": str|None, "sockets": int|None, "cores_total": int|None,
    "cores_per_socket": int|None}; None where the kernel does not say (ARM
    kernels and some VMs omit "model name", "physical id" or "core id").
    """
    model_name, cores_by_socket = None, {}
    for block in text.split("\n\n"):
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if model_name is None and fields.get("model name"):
            model_name = fields["model name"]
        if "physical id" in fields:
            cores = cores_by_socket.setdefault(fields["physical id"], set())
            if "core id" in fields:
                cores.add(fields["core id"])
    sockets = len(cores_by_socket) or None
    counted = [len(c) for c in cores_by_socket.values() if c]
    return {
        "model_name": model_name,
        "sockets": sockets,
        "cores_total": sum(counted) or None,
        "cores_per_socket": max(counted) if counted else None,
    }


def parse_meminfo_total_bytes(text: str) -> int | None:
    """MemTotal from /proc/meminfo text, in bytes (the file says kB, meaning KiB)."""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * _BYTES_PER_KIB
    return None


def parse_os_release_pretty_name(text: str) -> str | None:
    """PRETTY_NAME from /etc/os-release text, unquoted."""
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "PRETTY_NAME":
            return value.strip().strip("'\"") or None
    return None


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:  # not Linux, or a sandbox hiding /proc: fall back below
        return ""


def cpuinfo_text(path: str = "/proc/cpuinfo") -> str:
    """/proc/cpuinfo's text, "" where there is none (for parse_cpuinfo)."""
    return _read(path)


# ---- collection ---------------------------------------------------------------


def collect_host(
    cpuinfo_path: str = "/proc/cpuinfo", meminfo_path: str = "/proc/meminfo", os_release_path: str = "/etc/os-release"
) -> dict:
    """Host CPU, memory and OS keys of the description."""
    cpu = parse_cpuinfo(_read(cpuinfo_path))
    model_name = cpu["model_name"] or platform.processor() or "<FILL: host processor model name (not detected)>"
    threads = os.cpu_count() or 1
    cores_total = cpu["cores_total"]
    if cores_total is None:
        import psutil  # a core dependency; only needed where /proc/cpuinfo lacks core ids

        cores_total = psutil.cpu_count(logical=False) or threads
    # One socket when the kernel does not say: the common case on ARM and in VMs.
    sockets = cpu["sockets"] or 1
    mem_bytes = parse_meminfo_total_bytes(_read(meminfo_path))
    if mem_bytes is None:
        import psutil

        mem_bytes = psutil.virtual_memory().total
    return {
        "host_processor_model_name": model_name,
        "host_processors_per_node": sockets,
        "host_processor_core_count": cpu["cores_per_socket"] or math.ceil(cores_total / sockets),
        "host_physical_cores_per_node": cores_total,
        "host_threads_per_node": threads,
        "host_memory_capacity_gib": round(mem_bytes / _BYTES_PER_GIB, 1),
        "operating_system": (
            parse_os_release_pretty_name(_read(os_release_path)) or f"{platform.system()} {platform.release()}".strip()
        ),
        "kernel_version": platform.release(),
        "machine_architecture": platform.machine(),
    }


def installed_version(distributions: list[str]) -> str | None:
    """Version of the first installed distribution, read from metadata (nothing is imported)."""
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def collect_software(nvml_report: dict) -> dict:
    """Python, levelfield, framework and tool versions; null where not installed."""
    software = {"python": platform.python_version(), "levelfield": __version__}
    software.update({key: installed_version(dists) for key, dists in SOFTWARE_DISTRIBUTIONS.items()})
    software["nvidia_driver"] = nvml_report["driver_version"]
    software["cuda_driver"] = nvml_report["cuda_driver_version"]
    return software


def collect_system_description(*, nvml_report: dict | None = None, host: dict | None = None) -> dict:
    """A full description of this machine, vendor fields as placeholders, fingerprint included.

    `nvml_report` is a `query_nvml()` result (queried here when None); `host`
    replaces the host keys from `collect_host()`.
    """
    report = query_nvml() if nvml_report is None else nvml_report
    desc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "generated_by": f"levelfield {__version__}",
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **VENDOR_PLACEHOLDERS,
        "number_of_nodes": 1,
        **(host if host is not None else collect_host()),
        **accelerator_fields(report),
        "software": collect_software(report),
    }
    desc["fingerprint"] = fingerprint(desc)
    return desc


# ---- fingerprint ----------------------------------------------------------------


def _whole(value: Any) -> Any:
    """Round half up to a whole number (not banker's rounding), leaving non-numbers alone."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(math.floor(value + 0.5))
    return value


def fingerprint_content(desc: dict) -> dict:
    """The stable subset of a description, without the digest.

    Memory is in whole GiB so that a kernel reserving a few MiB more after an
    update does not change the fingerprint; clocks, free memory, timestamps
    and software versions are left out because they change between runs.
    """
    content = {key: desc.get(key) for key in FINGERPRINT_KEYS}
    content["host_memory_capacity_gib"] = _whole(desc.get("host_memory_capacity_gib"))
    content["accelerators"] = [
        {"model_name": a.get("model_name"), "memory_capacity_gib": _whole(a.get("memory_capacity_gib"))}
        for a in desc.get("accelerators") or []
        if isinstance(a, dict)
    ]
    return content


def compute_fingerprint_digest(content: dict) -> str:
    """SHA-256 hex of the canonical JSON (sorted keys, compact) of a fingerprint, `digest` excluded."""
    body = {k: v for k, v in content.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def fingerprint(desc: dict) -> dict:
    """The fingerprint object of a description: the stable subset plus its `digest`."""
    content = fingerprint_content(desc)
    return {**content, "digest": compute_fingerprint_digest(content)}


def fingerprint_differences(declared: dict, observed: dict) -> list[str]:
    """`key: declared X, observed Y` for each fingerprint key that differs (digest not listed)."""
    keys = sorted((set(declared) | set(observed)) - {"digest"})
    return [
        f"{key}: declared {json.dumps(declared.get(key))}, observed {json.dumps(observed.get(key))}"
        for key in keys
        if declared.get(key) != observed.get(key)
    ]


# ---- checking a filled-in description ------------------------------------------------


def description_problems(desc: Any) -> list[str]:
    """Every problem of a (filled-in) description, one `$.path: sentence` line each.

    Schema problems first; when the schema is satisfied, the fingerprint is
    checked twice: its digest against its own content (tampering or a
    hand-edit), and its content against the description's hardware keys (a
    hardware key edited after the fingerprint was taken).
    """
    from levelfield.ground.validation import problems, show

    found = problems(desc, "system")
    if found:
        return found
    declared = desc["fingerprint"]
    digest = compute_fingerprint_digest(declared)
    if declared["digest"] != digest:
        found.append(
            f"$.fingerprint.digest: does not match the fingerprint's content;"
            f" expected {show(digest, 80)}, got {show(declared['digest'], 80)}"
        )
    expected = fingerprint_content(desc)
    for key, value in expected.items():
        if declared.get(key) != value:
            found.append(
                f"$.fingerprint.{key}: expected {show(value)} (from the description's"
                f" hardware keys), got {show(declared.get(key))}"
            )
    if desc["accelerators_per_node"] != len(desc["accelerators"]):
        found.append(
            f"$.accelerators_per_node: expected {len(desc['accelerators'])} (entries in"
            f" $.accelerators), got {desc['accelerators_per_node']}"
        )
    # The summary keys are what tables show; they must say what the observed accelerator list says.
    summary = accelerator_fields({"devices": desc["accelerators"]})
    for key in ("accelerator_model_name", "accelerator_memory_capacity_gib"):
        if desc[key] != summary[key]:
            found.append(f"$.{key}: expected {show(summary[key])} (from $.accelerators), got {show(desc[key])}")
    return found


def placeholder_paths(value: Any, path: str = "$") -> list[str]:
    """JSON paths (`$.submitter`, `$.accelerators[0].model_name`) still holding a `<FILL: ...>` placeholder."""
    from levelfield.ground.validation import PLACEHOLDER_PREFIX

    if isinstance(value, str):
        return [path] if value.startswith(PLACEHOLDER_PREFIX) else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in placeholder_paths(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in placeholder_paths(v, f"{path}[{i}]")]
    return []


def to_json(desc: dict) -> str:
    """The description as the file holds it: indented, keys in collection order, final newline."""
    return json.dumps(desc, indent=2, ensure_ascii=False) + "\n"
