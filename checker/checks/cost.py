"""The cost of a result: the host's load over each run, its price, its meters and the host's settings.

Every training run logs, and every inference repeat records in result.json (`runs[i].resources`), what it
cost (levelfield/harness/run_meter.py): peak memory of its process tree, CPU shares of the tree, the host
and other processes, energy from a meter or "not measured", and with a declared hourly price its price.
Their domains are TRN017's (training) and the result schema's (STR010); these checks hold them to the
rules (the host's load), to the system description (the price, the host's settings) and to each other
(one way of metering per result). The environment's list of distributions is held to its digest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from levelfield.checker.checks.reproducibility import environment_records
from levelfield.checker.checks.training import training_logs
from levelfield.checker.context import Context
from levelfield.checker.findings import WARNING, Finding, check
from levelfield.ground import mllog_keys as LK
from levelfield.ground.meter import NOT_MEASURED, price_per_million_samples_usd, price_usd
from levelfield.ground.parse import finite_number, plain_int
from levelfield.ground.submission.records import Submission

_SHARE_KEYS = (LK.PROCESS_CPU_SHARE, LK.HOST_CPU_SHARE, LK.OTHERS_CPU_SHARE)


def inference_resources(sub: Submission) -> Iterator[tuple[Any, str, int, dict]]:
    """(run record, result.json path, repeat number, resources) of every performance repeat that recorded
    its cost; entries that are not objects are STR010's."""
    for run in sub.inferences:
        data = run.result.data if run.result is not None else None
        if run.mode != "performance" or not isinstance(data, dict) or not isinstance(data.get("runs"), list):
            continue
        for position, entry in enumerate(data["runs"], start=1):
            resources = entry.get("resources") if isinstance(entry, dict) else None
            if isinstance(resources, dict):
                number = entry.get("run") if plain_int(entry.get("run")) else position
                yield run, run.result.path, number, resources


@check("SYS009", "host-busy-during-run", area="system", severity=WARNING)
def host_busy_during_run(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a training run's levelfield_others_cpu_share, or an inference repeat's others_cpu_share, is above
    the rules' checks.host_load_max_others_share: processes other than the run's own (its launcher,
    children, DataLoader workers, ranks) used more of the host's CPU time during the timed window than the
    rules allow. Not judged under rules without the threshold (1.0, 1.1).
    Why: frameworks do not lose alike beside other work (PyTorch fell to 0.11x of its idle throughput beside
    one busy process per core, JAX to 0.69x; docs/fairness.md, A busy host): such a result does not compare
    fairly with one from an idle host. A warning: the figure is honest, its conditions are not the rules'.
    Bad: levelfield_others_cpu_share 0.48 under a threshold of 0.25 (another job started halfway through).
    Fix: run again on an otherwise idle host (stop other jobs; under a cluster manager, take the whole node).
    """
    limit = ctx.suite.checks.get("host_load_max_others_share")
    if limit is None:
        return
    for _training, log in training_logs(sub):
        for line in log.all(LK.OTHERS_CPU_SHARE):
            if finite_number(line.value) and line.value > limit:
                yield Finding.at(
                    log.path,
                    "other processes kept the host busy during the timed run",
                    line=line.lineno,
                    found=line.value,
                    expected=f"<= {limit} (checks.host_load_max_others_share)",
                    hint="run again on an otherwise idle host",
                )
    for _run, path, number, resources in inference_resources(sub):
        share = resources.get("others_cpu_share")
        if finite_number(share) and share > limit:
            yield Finding.at(
                path,
                f"run {number}: other processes kept the host busy during the timed run",
                found=share,
                expected=f"<= {limit} (checks.host_load_max_others_share)",
                hint="run again on an otherwise idle host",
            )


def _declared_price(sub: Submission, system_id: str) -> tuple[float | None, str | None]:
    """(hourly_price_usd, the description's path) of a system; price None when it declares none."""
    system = sub.systems.get(system_id)
    if system is None or not isinstance(system.data, dict):
        return None, None
    price = system.data.get("hourly_price_usd")
    return (price if finite_number(price) else None), system.path


def _same(found: float, expected: float) -> bool:
    # Both sides come from one function of the same numbers (the log's integer times, the description's
    # price); JSON keeps a float exactly, so an honest file agrees to the last bit.
    return found == expected


@check("SYS010", "price-mismatch", area="system")
def price_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a price a run recorded is not the system description's hourly_price_usd applied to the run: a
    training run's levelfield_price_usd against price x levelfield_nodes x (run_stop - run_start), an
    inference repeat's price_usd_per_million_samples against price x window_s / samples x 10^6 (one node);
    or a run recorded a price under a description that declares none.
    Why: the leaderboard shows what a result costs; a price from another hourly rate (a run priced with one
    description and filed under another) or an edited one misstates it.
    Bad: levelfield_price_usd 0.5 where the description's 3.6 USD/h over a 100 s run gives 0.1.
    Fix: run with `--system` naming the description the result is filed under, or correct the
    description's hourly_price_usd and run again.
    """
    for training, log in training_logs(sub):
        line = log.first(LK.PRICE_USD)
        if line is None or not finite_number(line.value):
            continue  # no price recorded; a value of the wrong kind is TRN017's
        hourly, where = _declared_price(sub, training.system)
        start, stop, nodes = log.first("run_start"), log.first("run_stop"), log.value(LK.NODES, 1)
        if hourly is None:
            yield Finding.at(
                log.path,
                f"a price recorded, but {where or 'the system'} declares no hourly_price_usd",
                line=line.lineno,
                found=line.value,
                expected="no levelfield_price_usd",
            )
            continue
        if start is None or stop is None or not (finite_number(start.time_ms) and finite_number(stop.time_ms)):
            continue  # TRN001 / TRN012
        if not plain_int(nodes):
            continue  # TRN017
        expected = price_usd(hourly, nodes, (stop.time_ms - start.time_ms) / 1000)
        if not _same(line.value, expected):
            yield Finding.at(
                log.path,
                f"levelfield_price_usd is not the run's price at {where}'s hourly_price_usd",
                line=line.lineno,
                found=line.value,
                expected=expected,
                hint="run with --system naming the description the result is filed under",
            )
    for run, path, number, resources in inference_resources(sub):
        found = resources.get("price_usd_per_million_samples")
        if not finite_number(found):
            continue
        hourly, where = _declared_price(sub, run.system)
        window_s, samples = resources.get("window_s"), resources.get("samples")
        if hourly is None:
            yield Finding.at(
                path,
                f"run {number}: a price recorded, but {where or 'the system'} declares no hourly_price_usd",
                found=found,
                expected="no price_usd_per_million_samples",
            )
            continue
        if not (finite_number(window_s) and plain_int(samples)):
            continue  # STR010
        expected = price_per_million_samples_usd(hourly, 1, window_s, samples)
        if expected is None or not _same(found, expected):
            yield Finding.at(
                path,
                f"run {number}: price_usd_per_million_samples is not the run's price at {where}'s hourly_price_usd",
                found=found,
                expected=expected,
                hint="run with --system naming the description the result is filed under",
            )


def _host(environment: Any) -> dict | None:
    host = environment.get("host") if isinstance(environment, dict) else None
    return host if isinstance(host, dict) else None


def host_contradictions(host: dict, system: dict) -> list[tuple[str, object, object]]:
    """(what, recorded, declared) for each host setting an environment recorded that its system description
    contradicts: the kernel, the number of GPUs, a GPU's power limit (where both state one)."""
    found = []
    kernel, declared_kernel = host.get("kernel"), system.get("kernel_version")
    if isinstance(kernel, str) and isinstance(declared_kernel, str) and kernel != declared_kernel:
        found.append(("kernel", kernel, declared_kernel))
    gpus, declared = host.get("gpus"), system.get("accelerators")
    if isinstance(gpus, list) and isinstance(declared, list):
        if plain_int(system.get("accelerators_per_node")) and len(gpus) != system["accelerators_per_node"]:
            found.append(("GPUs", len(gpus), system["accelerators_per_node"]))
        for gpu, accelerator in zip(gpus, declared, strict=False):
            if not (isinstance(gpu, dict) and isinstance(accelerator, dict)):
                continue
            limit, declared_limit = gpu.get("power_limit_w"), accelerator.get("power_limit_w")
            if finite_number(limit) and finite_number(declared_limit) and limit != declared_limit:
                found.append((f"GPU {gpu.get('index')} power limit W", limit, declared_limit))
    return found


@check("SYS011", "host-settings-contradict-system", area="system")
def host_settings_contradict_system(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: the host settings a result's environment.json recorded (environment.host) contradict its system
    description: another kernel than kernel_version, another number of GPUs than accelerators_per_node, or a
    GPU power limit other than the one the description's accelerators list for it.
    Why: the description is what the leaderboard shows beside the result; a GPU capped at 300 W filed under
    a description of the same board at 700 W, or results from another kernel, were not measured on the
    system as declared. (Every run of the result holds to environment.json: REP001.)
    Bad: environment.json host.gpus[0].power_limit_w 300.0 under "accelerators": [{"power_limit_w": 700.0}].
    Fix: describe the system as it ran (`levelfield sysinfo` on it, in the same settings), or run again
    with the declared settings.
    """
    for (system_id, _task, _framework), file in sorted(sub.environments.items()):
        system = sub.systems.get(system_id)
        host = _host(file.data)
        if system is None or not isinstance(system.data, dict) or host is None:
            continue  # SYS004 / STR003 / an environment written before levelfield recorded its host
        for what, recorded, declared in host_contradictions(host, system.data):
            yield Finding.at(
                file.path,
                f"host {what} recorded differs from {system.path}",
                found=recorded,
                expected=declared,
                hint="describe the system as the runs used it (`levelfield sysinfo`), or run as declared",
            )


@check("REP004", "distributions-digest-mismatch", area="reproducibility")
def distributions_digest_mismatch(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: an environment record's distributions_digest is not the SHA-256 of its own distributions list
    (sorted `name==version` lines), in environment.json, result.json or a training log.
    Why: the digest lets a reproduction compare its whole installed set with the result's in one value; a
    digest that does not match its list was edited, or its list was.
    Bad: "distributions": {"numpy": "2.5.0", ...} with a distributions_digest computed over numpy 2.4.1.
    Fix: submit the files levelfield wrote, unedited.
    """
    from levelfield.ground.environment import distributions_digest

    records = [(f.path, None, f.data) for _key, f in sorted(sub.environments.items())]
    records += [(path, line, env) for _key, path, line, env in environment_records(sub)]
    for path, line, environment in records:
        if not isinstance(environment, dict) or "distributions_digest" not in environment:
            continue
        listed = environment.get("distributions")
        if not isinstance(listed, dict) or not all(isinstance(v, str) for v in listed.values()):
            continue  # STR010
        expected = distributions_digest(listed)
        if environment["distributions_digest"] != expected:
            yield Finding.at(
                path,
                "distributions_digest is not the digest of the distributions listed",
                line=line,
                found=environment["distributions_digest"],
                expected=expected,
                hint="submit the files levelfield wrote, unedited",
            )


def _meters(values: dict) -> dict:
    """How a run was metered: its sample interval, and which energies a meter measured."""
    return {
        "sample_interval_ms": values.get("sample_interval_ms"),
        "cpu energy": "measured" if values.get("cpu_energy_j") != NOT_MEASURED else NOT_MEASURED,
        "gpu energy": "measured" if values.get("gpu_energy_j") != NOT_MEASURED else NOT_MEASURED,
    }


def _text(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def _share_problem(values: dict) -> str | None:
    others, host = values.get("others_cpu_share"), values.get("host_cpu_share")
    if finite_number(others) and finite_number(host) and others > host:
        return f"others_cpu_share {others} above host_cpu_share {host}: other processes cannot use more than all"
    return None


@check("REP005", "cost-figures-inconsistent", area="reproducibility")
def cost_figures_inconsistent(sub: Submission, ctx: Context) -> Iterator[Finding]:
    """What: a run's cost figures contradict each other (other processes' share of the host's CPU time above
    the whole host's share), or the runs of one result were metered differently: another sample interval,
    or energy measured by a meter in one run and "not measured" in another.
    Why: a result's figures are compared run by run and averaged; a peak memory sampled every 10 ms beside
    one sampled every second, or an energy that exists for some runs only, is not one measurement.
    Bad: result_0.txt levelfield_sample_interval_ms 100, result_1.txt 1000; or a repeat's others_cpu_share
    0.6 with host_cpu_share 0.4.
    Fix: run every run of a result with the same levelfield, rules and host; submit the files unedited.
    """
    for training in sub.trainings:
        first = None
        for log in training.logs:
            values = {key.removeprefix("levelfield_"): log.value(key) for key in (*_SHARE_KEYS, LK.SAMPLE_INTERVAL_MS)}
            values |= {"cpu_energy_j": log.value(LK.CPU_ENERGY_J), "gpu_energy_j": log.value(LK.ENERGY_J)}
            if log.first(LK.SAMPLE_INTERVAL_MS) is None:
                continue  # written before levelfield metered runs
            problem = _share_problem(values)
            if problem:
                yield Finding.at(log.path, problem, line=log.first(LK.OTHERS_CPU_SHARE).lineno)
            if first is None:
                first = (log, _meters(values))
            elif _meters(values) != first[1]:
                yield Finding.at(
                    log.path, f"metered unlike {first[0].path}", found=_text(_meters(values)), expected=_text(first[1])
                )
    firsts: dict[str, tuple[int, dict]] = {}
    for _run, path, number, resources in inference_resources(sub):
        problem = _share_problem(resources)
        if problem:
            yield Finding.at(path, f"run {number}: {problem}")
        meters = _meters(resources)
        if path not in firsts:
            firsts[path] = (number, meters)
        elif meters != firsts[path][1]:
            yield Finding.at(
                path,
                f"run {number} metered unlike run {firsts[path][0]}",
                found=_text(meters),
                expected=_text(firsts[path][1]),
            )
