"""The planted defects of the cost checks (SYS009-SYS011, REP004, REP005; checker/checks/cost.py), collected
into PLANTS by test_checker_fixtures.py, and the edits their passing twins share (test_checker_cost.py).

    log_cost(first(tree, "training/result_0.txt"), {LK.OTHERS_CPU_SHARE: 0.6})   # the run's cost lines
    every_environment(tree, lambda env: env.update(host=host_record("6.0")))      # one edit, every record
    rules_dir = with_host_load_limit(tmp, 0.25)                                    # the example's rules, judged

The example submission was made before runs recorded their cost, so each plant adds what a newer run
writes, as it writes it, then plants one defect.
"""

from __future__ import annotations

import json

from levelfield.ground import mllog_keys as LK
from levelfield.ground.accelerators import NOT_EXPOSED
from levelfield.ground.environment import distributions_digest
from levelfield.ground.meter import NOT_MEASURED, price_usd
from tests.node_plants import log_beside_world_size
from tests.rules_copies import rules_with
from tests.submission_edit import MLLOG_PREFIX, edit_json, edit_mllog, files, first

HOURLY_USD = 3.6


def log_cost(log, values: dict) -> None:
    """Log each key with its value, as the trainer does (one line each)."""
    for key, value in values.items():
        log_beside_world_size(log, key, value)


def run_times_ms(log) -> tuple[float, float]:
    times = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line[len(MLLOG_PREFIX) :])
        if entry["key"] in ("run_start", "run_stop"):
            times.setdefault(entry["key"], entry["time_ms"])
    return times["run_start"], times["run_stop"]


def honest_price(log, hourly: float = HOURLY_USD) -> float:
    start, stop = run_times_ms(log)
    return price_usd(hourly, 1, (stop - start) / 1000)


def declare_price(tree, hourly: float = HOURLY_USD) -> None:
    edit_json(next(tree.glob("*/*/systems/*.json")), lambda d: d.update(hourly_price_usd=hourly))


def with_host_load_limit(tmp, limit: float = 0.25):
    """The shipped rules with the example's version given rules 1.2's host-load threshold."""
    key = "\n  host_load_max_others_share:"
    return rules_with(
        tmp,
        lambda text, task_id: text,
        lambda text: text if key in text else text.replace("\nchecks:\n", f"\nchecks:{key} {limit}\n", 1),
    )


def every_environment(tree, change) -> None:
    """change(environment) on every environment record of the tree: environment.json, each result.json's
    and each training log's levelfield_environment (so REP001 sees one environment)."""
    for path in files(tree):
        name = path.name
        if name == "environment.json":
            edit_json(path, change)
        elif name == "result.json":
            edit_json(path, lambda d: change(d["environment"]))
        elif name.startswith("result_") and name.endswith(".txt"):

            def changed(entry):
                change(entry["value"])
                return entry

            edit_mllog(path, LK.ENVIRONMENT, changed)


def host_record(kernel: str, gpus: list | str = NOT_EXPOSED) -> dict:
    """A host record as environment.host_record writes it (a CPU system's: no GPU exposed)."""
    return {
        "kernel": kernel,
        "cpu": {
            "governor": "performance",
            "scaling_driver": "intel_pstate",
            "energy_performance_preference": "performance",
            "boost": True,
            "smt": {"active": False, "control": "off"},
            "microcode": "0x2b000603",
        },
        "numa": [{"node": 0, "cpus": "0-1"}],
        "container": {"inside": False},
        "gpus": gpus,
    }


def declared_kernel(tree) -> str:
    return json.loads(next(tree.glob("*/*/systems/*.json")).read_text())["kernel_version"]


def performance_resources(tree, change) -> None:
    """Add a cost record to every repeat of the first performance result, then change(resources, run)."""

    def edit(data):
        for entry in data["runs"]:
            entry["resources"] = {
                "window_s": entry["loadgen_run_s"],
                "sample_interval_ms": 100,
                "samples": 1000,
                "peak_tree_rss_mib": 512.0,
                "tree_processes": 1,
                "process_cpu_s": 1.0,
                "process_cpu_share": 0.45,
                "host_cpu_share": 0.5,
                "others_cpu_share": 0.05,
                "cpu_energy_j": NOT_MEASURED,
                "gpu_energy_j": NOT_MEASURED,
                "peak_device_memory_used_mib": None,
            }
            change(entry["resources"], entry["run"])

    edit_json(first(tree, "offline/performance/result.json"), edit)


# --- the plants ------------------------------------------------------------------------------------------
def plant_sys009(tree, tmp):
    # Two busy loops started halfway through the second run's timed window: half the host, half the time.
    log_cost(first(tree, "training/result_1.txt"), {LK.OTHERS_CPU_SHARE: 0.26, LK.HOST_CPU_SHARE: 0.9})
    return {"rules_dir": with_host_load_limit(tmp)}


def plant_sys010(tree, tmp):
    # Priced at another hourly rate than the description the result is filed under.
    declare_price(tree)
    log = first(tree, "training/result_0.txt")
    log_cost(log, {LK.PRICE_USD: honest_price(log, hourly=2 * HOURLY_USD)})


def plant_sys011(tree, tmp):
    every_environment(tree, lambda env: env.update(host=host_record(declared_kernel(tree) + "-other")))


def plant_rep004(tree, tmp):
    listed = {"numpy": "2.5.0", "levelfield": "0.1.0"}
    stale = distributions_digest({**listed, "numpy": "2.4.1"})
    every_environment(tree, lambda env: env.update(distributions=listed, distributions_digest=stale))


def plant_rep005(tree, tmp):
    for index, interval_ms in ((0, 100), (1, 1000)):
        log = first(tree, f"training/result_{index}.txt")
        log_cost(log, {LK.SAMPLE_INTERVAL_MS: interval_ms, LK.CPU_ENERGY_J: NOT_MEASURED})
