"""device_check.json (every step and process, its status, time and figures) and device_check.md (the same as tables).

from levelfield.cli.device_check.report import write_reports
write_reports(out, header, results, processes)     # atomically, after every step
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

from tabulate import tabulate

from levelfield.cli.device_check.events import STATUSES
from levelfield.ground.fsutil import atomic_write_text

JSON_NAME = "device_check.json"
MARKDOWN_NAME = "device_check.md"
# The distributions whose versions say what ran (the frameworks as found on the node, whatever their versions).
VERSIONED = (
    "torch",
    "tensorflow",
    "tensorflow-cpu",
    "jax",
    "jaxlib",
    "jax-cuda12-plugin",
    "jax-cuda13-plugin",
    "flax",
    "optax",
    "numpy",
    "nvidia-ml-py",
    "mlcommons-loadgen",
    "mlperf-logging",
    "levelfield",
)


def installed_versions() -> dict[str, str | None]:
    versions = {}
    for name in VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def document(header: dict, results: list[dict], processes: list[dict]) -> dict:
    counts = {status: sum(r["status"] == status for r in results) for status in STATUSES}
    passed = counts["passed"] == len(results) > 0
    return {**header, "passed": passed, "counts": counts, "processes": processes, "steps": results}


def write_reports(out: Path, header: dict, results: list[dict], processes: list[dict]) -> dict:
    doc = document(header, results, processes)
    atomic_write_text(out / JSON_NAME, json.dumps(doc, indent=2) + "\n", overwrite=True)
    atomic_write_text(out / MARKDOWN_NAME, markdown(doc), overwrite=True)
    return doc


def _figure(result: dict) -> str:
    """The step's headline figure, in words with units; else why it did not pass."""
    f = result.get("figures") or {}
    kind = result["kind"]
    if result["status"] != "passed" and result.get("reason"):
        return result["reason"]
    if kind == "sysinfo":
        accelerators = f"{f.get('accelerators_per_node')} x {f.get('accelerator_model_name')}"
        return f"{accelerators}; {f.get('host_processor_model_name')}"
    if kind == "time_to_accuracy" and f.get("time_to_train_s") is not None:
        return f"{f['time_to_train_s']:.2f} s to target ({f.get('epochs')} epochs)"
    if kind == "throughput" and f.get("train_samples_per_s") is not None:
        memory, energy = f.get("peak_device_memory_mib"), f.get("energy_j")
        extra = (f", peak device memory {memory:.0f} MiB" if memory else "") + (f", {energy:,.0f} J" if energy else "")
        return (
            f"{f['train_samples_per_s']:,.1f} samples/s, step {f['step_time_ms']:.2f} ms "
            f"(batch {f.get('global_batch_size')}){extra}"
        )
    if kind == "inference" and f.get("value") is not None:
        return f"{f['metric']} {f['value']:,.4g} ({f.get('result_validity')}, {f.get('query_count')} queries)"
    if kind == "equivalence" and "tests" in f:
        return (
            f"{f['passed']} of {f['tests']} passed ({f.get('frameworks')}); "
            f"failed: {', '.join(f['failed_tests']) or 'none'}"
        )
    return result.get("reason") or ""


def _device(results: list[dict]) -> str:
    """The device the runs reported (levelfield_determinism's device), once per distinct record."""
    seen = []
    for r in results:
        device = (r.get("figures") or {}).get("device")
        if device and device not in seen:
            seen.append(device)
    rows = [[d["kind"], d["name"], d["count"], d["driver"], d["cuda_runtime"], d["cudnn"], d["nccl"]] for d in seen]
    headers = ["kind", "name", "count", "driver", "CUDA runtime", "cuDNN", "NCCL"]
    # Versions are text ("13.0" is not the number 13): no number parsing.
    table = tabulate(rows, headers, tablefmt="github", disable_numparse=True)
    return table if rows else "(no run reported its device)"


def _processes(processes: list[dict]) -> str:
    rows = [[p["process"], p["share_s"], p.get("startup_s"), p.get("seconds"), p["exit"]] for p in processes]
    headers = ["process", "share s", "start-up s", "s", "exit"]
    return tabulate(rows, headers, tablefmt="github") if rows else "(none started yet)"


def markdown(doc: dict) -> str:
    verdict = "PASSED" if doc["passed"] else "NOT PASSED"
    counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in doc["counts"].items())
    versions = ", ".join(f"{name} {v}" for name, v in doc["versions"].items() if v)
    rows = [
        [
            r["id"],
            r["process"],
            r["status"],
            r["seconds"],
            r.get("cpu_s"),
            r.get("estimate_s"),
            r.get("mode") or "",
            r.get("mode_reason") or "",
            _figure(r),
        ]
        for r in doc["steps"]
    ]
    headers = ["step", "process", "status", "s", "cpu s", "estimate s", "mode", "why eager", "figure or reason"]
    table = tabulate(rows, headers, tablefmt="github")
    return (
        f"# levelfield device check: {verdict}\n\n"
        f"- size `{doc['size']}`, time limit {doc['time_limit_s']:.0f} s, {doc['elapsed_s']:.0f} s used; "
        f"started {doc['started_utc']}; rules {doc['rules_version']}\n"
        f"- steps: {counts}\n"
        f"- frameworks checked: {', '.join(doc['frameworks'])}; absent: {', '.join(doc['absent']) or 'none'}\n"
        f"- versions: {versions}\n\n"
        f"## Device, as the runs reported it\n\n{_device(doc['steps'])}\n\n"
        f"## Processes\n\n{_processes(doc['processes'])}\n\n"
        "One process per framework runs all of its steps; the equivalence tests run in pytest's. Each gets a "
        "share of the time left in proportion to its estimate; start-up is the time to its first step "
        "(imports, device start-up; pytest's collection).\n\n"
        f"## Steps\n\n{table}\n\n"
        "Each step's output is under `logs/`, its files under `runs/`; cpu s: the host CPU seconds of its "
        "process and the workers it waited for. Estimates are for the check's size on its reference machine "
        "(gpu: one H200, docs/scale.md). Inference runs use the rules' smoke profile "
        "(LoadGen's minimums of a smoke run), so their figures show that the path works, not a result.\n"
    )


def expected_markdown(plan_rows: list[dict], time_limit_s: float, size: str) -> str:
    """`levelfield device-check --dry-run`: budget.expected's rows as a table, with what would be cut."""
    rows = [[r["id"], r["process"], r["estimate_s"], r["start_s"], r["status"]] for r in plan_rows]
    ends = [r["start_s"] + (r["estimate_s"] or 0) for r in plan_rows if r["status"] == "runs"]
    cut = [r["id"] for r in plan_rows if r["status"] != "runs"]
    table = tabulate(rows, ["step", "process", "estimate s", "expected start s", "expected"], tablefmt="github")
    return (
        f"# levelfield device check: the plan at size `{size}` within {time_limit_s:.0f} s (dry run)\n\n"
        f"{table}\n\n"
        f"Had every step taken its estimate (size `{size}`: {ESTIMATE_BASIS[size]}), the steps that run end by "
        f"{max(ends, default=0):.0f} s; {len(cut)} of {len(plan_rows)} cut or cut short"
        f"{': ' + ', '.join(cut) if cut else ''}.\n"
    )


ESTIMATE_BASIS = {
    "gpu": "one H200, docs/scale.md's arithmetic",
    "smoke": "this project's 2-core CPU",
}
