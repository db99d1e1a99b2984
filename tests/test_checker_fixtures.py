"""Every check has a failing fixture and a passing one.

The passing fixture is the example submission (submissions/example, produced
by `make example` with the submission profile): it must check clean. Each
failing fixture is that example with one planted defect, resealed (MANIFEST
rewritten) unless the defect is about integrity, and must produce exactly the
code of the check that catches it, nothing more.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

import levelfield.checker.checks  # noqa: F401 - registers every check
from conftest import EXAMPLE, example_rules_version
from levelfield.checker.engine import check_tree
from tests.rules_copies import rules_with, rules_with_rcp_points
from tests.submission_edit import (
    change_one_byte,
    copy_tree,
    edit_json,
    edit_mllog,
    files,
    first,
    loadgen_error_line,
    read_gz_json,
    reseal,
    set_value,
    write_gz_json,
)

REPO = Path(__file__).resolve().parents[1]


def codes(root: Path, **kwargs) -> set[str]:
    return {f.code for f in check_tree(root, **kwargs).active}


@pytest.fixture(scope="module")
def baseline() -> set[str]:
    return codes(EXAMPLE)


def test_example_submission_checks_clean():
    report = check_tree(EXAMPLE)
    assert [f.text() for f in report.findings] == []
    assert not report.failed


# --- planted defects: each returns extra check_tree kwargs (e.g. a rules folder) or None ---------


def _training_log(tree, i=0):
    return first(tree, f"training/result_{i}.txt")


def _detail(tree, mode="performance"):
    """The detail log of the first performance repeat (run_1/), or of the first accuracy run."""
    return first(tree, f"/{mode}/{'run_1/' if mode == 'performance' else ''}mlperf_log_detail.txt")


def _performance(tree):
    """The first performance folder: result.json, settings.json and run_1/ .. run_N/."""
    return first(tree, "offline/performance/result.json").parent


def plant_str001(tree, tmp):
    first(tree, "performance/run_2/mlperf_log_summary.txt").unlink()


def plant_str002(tree, tmp):
    (_training_log(tree).parent.parent / "notes.txt").write_text("tuned by hand\n")


def plant_str003(tree, tmp):
    with _training_log(tree).open("a") as f:
        f.write(':::MLLOG {"key": "run_st\n')  # a line cut short by a crash


def plant_str010(tree, tmp):
    edit_mllog(_detail(tree), "get_sut_name_duration_ns", set_value("12"))  # LoadGen writes an integer


def plant_str004(tree, tmp):
    os.symlink("/etc/hostname", _training_log(tree).parent / "result_9.txt")


def plant_str005(tree, tmp):
    with open(_training_log(tree).parent / "huge.bin", "wb") as f:  # sparse: no disk used
        f.truncate(65 * 1024 * 1024)
    return {"reseal": False}


def plant_str006(tree, tmp):
    change_one_byte(tree)  # one byte of a file no other check reads: only the MANIFEST sees it
    return {"reseal": False}


def plant_str007(tree, tmp):
    manifest = tree / "MANIFEST"
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(lines[:-1]))
    return {"reseal": False}


def plant_str008(tree, tmp):
    with (tree / "MANIFEST").open("a") as f:
        f.write("0" * 64 + "  ../outside.txt\n")
    return {"reseal": False}


def plant_str009(tree, tmp):
    folder = first(tree, "offline/performance/result.json").parent.parent
    folder.rename(folder.with_name("Offline"))


def _system(tree):
    return next(tree.glob("*/*/systems/*.json"))


def plant_sys001(tree, tmp):
    edit_json(_system(tree), lambda d: d.update(status="generally available"))


def plant_sys002(tree, tmp):
    edit_json(_system(tree), lambda d: d.update(submitter="Other Corp"))


def plant_sys003(tree, tmp):
    edit_json(_system(tree), lambda d: d.update(system_type="<FILL: datacenter or edge>"))


def plant_sys004(tree, tmp):
    result = next(tree.glob("*/*/results/*"))
    shutil.copytree(result, result.with_name(result.name + "-2"))


def plant_sys005(tree, tmp):  # a run on another machine: its fingerprint is consistent, and not the declared one
    from levelfield.ground.sysinfo import compute_fingerprint_digest

    def other_machine(result):
        result["system_fingerprint"]["host_processor_model_name"] = "AMD EPYC 9654"
        result["system_fingerprint"]["digest"] = compute_fingerprint_digest(result["system_fingerprint"])

    edit_json(first(tree, "offline/performance/result.json"), other_machine)


def plant_sys006(tree, tmp):
    edit_json(_system(tree), lambda d: d["software"].update(torch="2.14.0"))


def plant_sys007(tree, tmp):
    edit_json(
        first(tree, "offline/performance/result.json"),
        lambda d: d["system_fingerprint"].update(digest="0" * 64),
    )


def plant_trn001(tree, tmp):
    edit_mllog(_training_log(tree), "cache_clear", lambda e: None)


def plant_trn003(tree, tmp):
    log = _training_log(tree)
    other = "pytorch" if "/jax/" not in log.as_posix() else "tensorflow"
    edit_mllog(log, "levelfield_framework", set_value(other))


def _abort(log, reason="max epochs"):
    edit_mllog(log, "run_stop", lambda e: {**e, "metadata": {**e["metadata"], "status": "aborted", "reason": reason}})


def _never_converged(log, value=0.5):
    """The run as the trainer writes one that never reached the target: every eval `value` (below it), aborted."""
    evals = sum('"key": "eval_accuracy"' in line for line in log.read_text().splitlines())
    for n in range(evals):
        edit_mllog(log, "eval_accuracy", set_value(value), occurrence=n)
    _abort(log)


def plant_trn004(tree, tmp):
    for i in (0, 1):
        _never_converged(_training_log(tree, i))


def plant_trn005(tree, tmp):
    # run_stop still says success, but the eval that ended the run is below the target
    edit_mllog(_training_log(tree), "eval_accuracy", set_value(0.5), occurrence=-1)


def plant_trn018(tree, tmp):
    # A run whose eval reached the target, relabelled aborted: the trainer would have stopped it with success.
    _abort(_training_log(tree, 3), reason="interrupted")


def plant_trn006(tree, tmp):
    seed = None

    def take(entry):
        nonlocal seed
        seed = entry["value"]
        return entry

    edit_mllog(_training_log(tree, 0), "seed", take)
    edit_mllog(_training_log(tree, 1), "seed", set_value(seed))


def plant_trn007(tree, tmp):
    logs = sorted(_training_log(tree).parent.glob("result_*.txt"))
    logs[-1].unlink()


def plant_trn008(tree, tmp):
    # Every run of the set alike (else TRN016 would also see runs that differ from each other).
    for log in _training_log(tree).parent.glob("result_*.txt"):
        edit_mllog(log, "opt_base_learning_rate", set_value(5.0))


def plant_trn016(tree, tmp):
    # One run of the set with another learning rate, still inside the rules' tunable range (TRN008 quiet).
    from levelfield.rules import load_suite

    log = first(tree, "training/result_3.txt")
    spec = load_suite().task(log.parts[-4]).hyperparameters["tunable"]["learning_rate"]
    edit_mllog(log, "opt_base_learning_rate", lambda e: {**e, "value": (e["value"] + spec["max"]) / 2})


def plant_trn020(tree, tmp):
    # One run of the set compiled differently from the first: a value no rule fixes (TRN008, TRN016 quiet).
    edit_mllog(first(tree, "training/result_2.txt"), "levelfield_compile_mode", set_value("eager"))


def plant_trn017(tree, tmp):
    edit_mllog(_training_log(tree, 2), "seed", set_value(-1))


def plant_trn012(tree, tmp):
    # run_start logged before init_stop: the two lines trade places, each keeping its slot's time_ms
    # so the timestamps still never go back (that is TRN015's).
    log = _training_log(tree)
    lines = log.read_text().splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if '"key": "init_stop"' in line)
    j = next(n for n, line in enumerate(lines) if '"key": "run_start"' in line)
    a, b = (json.loads(lines[n][len(":::MLLOG ") :]) for n in (i, j))
    a["time_ms"], b["time_ms"] = b["time_ms"], a["time_ms"]
    lines[i], lines[j] = (":::MLLOG " + json.dumps(entry) + "\n" for entry in (b, a))
    log.write_text("".join(lines))


def plant_trn013(tree, tmp):
    # An eval after run_stop, a millisecond after the last line: order of time kept, order of events not.
    log = _training_log(tree)
    lines = log.read_text().splitlines(keepends=True)
    last = json.loads(lines[-1][len(":::MLLOG ") :])
    last_eval = next(line for line in reversed(lines) if '"key": "eval_accuracy"' in line)
    evaluation = json.loads(last_eval[len(":::MLLOG ") :])
    lines.append(":::MLLOG " + json.dumps({**evaluation, "time_ms": last["time_ms"] + 1}) + "\n")
    log.write_text("".join(lines))


def _renumber_epoch(log, old: int, new: int) -> None:
    """Every line of epoch `old` (its epoch_start, epoch_stop and evals, which in rules 1.1 carry the
    fraction of epochs trained, in (old - 1, old]) says epoch `new` instead, shifted by the same amount."""
    lines = []
    for line in log.read_text().splitlines(keepends=True):
        entry = json.loads(line[len(":::MLLOG ") :])
        number = entry["metadata"].get("epoch_num")
        if isinstance(number, (int, float)) and not isinstance(number, bool) and old - 1 < number <= old:
            moved = {**entry["metadata"], "epoch_num": number + (new - old)}  # an int stays an int
            line = ":::MLLOG " + json.dumps({**entry, "metadata": moved}) + "\n"
        lines.append(line)
    log.write_text("".join(lines))


def plant_trn014(tree, tmp):
    # The whole first epoch renumbered, consistently (else TRN019 would see its lines disagree), in a run that
    # went on to a second epoch: its last evaluation keeps its number (else TRN023 would count 7 epochs).
    _renumber_epoch(next(log for log in sorted(tree.rglob("training/result_*.txt")) if _has_epoch(log, 2)), 1, 7)


def _has_epoch(log, number: int) -> bool:
    starts = [json.loads(line[len(":::MLLOG ") :]) for line in log.read_text().splitlines() if "epoch_start" in line]
    return any(entry["metadata"].get("epoch_num") == number for entry in starts)


def plant_trn019(tree, tmp):
    # The eval that ended a run of 2+ evaluated epochs claims the epoch before: epochs to target one fewer.
    log = next(p for p in files(tree) if "/training/" in p.as_posix() and p.read_text().count('"eval_accuracy"') > 1)
    edit_mllog(
        log,
        "eval_accuracy",
        lambda e: {**e, "metadata": {**e["metadata"], "epoch_num": e["metadata"]["epoch_num"] - 1}},
        -1,
    )


def plant_trn015(tree, tmp):
    log = _training_log(tree)
    edit_mllog(log, "epoch_stop", lambda e: {**e, "time_ms": e["time_ms"] - 3_600_000})


# Reference convergence points that the example's epochs to target (pytorch and tensorflow 1.25, 1.5, 1.75,
# 1.0, 1.5; jax 1.0, 1.5, 1.75, 1.5, 1.5) fit: pooled olympic mean 1.54 epochs, minimum acceptable mean 1.23.
HONEST_RCP = {
    "pytorch": [1.25, 1.5, 1.5, 1.75, 2.0],
    "tensorflow": [1.5, 1.25, 1.75, 1.5, 2.0],
    "jax": [1.25, 1.5, 1.75, 1.5, 1.0],
}


def plant_trn021(tree, tmp):
    # Points calibrated at 2048 and 4096 only: the example's global_batch_size 1024 lies below them.
    return {"rules_dir": str(rules_with_rcp_points(tmp, {2048: HONEST_RCP, 4096: HONEST_RCP}))}


def plant_trn009(tree, tmp):
    # Reference runs that needed 6-7 epochs make the example's 1-2 epochs implausibly fast.
    # (every framework's list: 1.0's one set of seeds, 1.1's one per calibrated batch size)
    rules = rules_with(
        tmp, lambda t, _: re.sub(r"(\n +(pytorch|tensorflow|jax): )\[[^\]]*\]", r"\1[6, 7, 6.5, 7, 6]", t)
    )
    return {"rules_dir": str(rules)}


def plant_trn010(tree, tmp):
    edit_mllog(_training_log(tree), "levelfield_profile", set_value("smoke"))


def plant_trn011(tree, tmp):
    log = _training_log(tree)
    lines = log.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if '"key": "init_start"' in line)
    shifted = []
    for i, line in enumerate(lines):  # move init_start and everything before it 2 hours earlier
        if i <= start:
            entry = json.loads(line[len(":::MLLOG ") :])
            entry["time_ms"] -= 7_200_000
            line = ":::MLLOG " + json.dumps(entry) + "\n"
        shifted.append(line)
    log.write_text("".join(shifted))


def plant_rep001(tree, tmp):
    edit_json(first(tree, "environment.json"), lambda d: d.update(digest="0" * 64))


def plant_rep002(tree, tmp):
    edit_mllog(
        _training_log(tree), "levelfield_dataset_digest", lambda e: {**e, "value": dict.fromkeys(e["value"], "f" * 64)}
    )


def plant_rep003(tree, tmp):
    edit_mllog(
        _training_log(tree),
        "levelfield_environment",
        lambda e: {
            **e,
            "value": {
                **e["value"],
                "levelfield_git": {
                    **e["value"]["levelfield_git"],
                    "dirty": True,
                    "dirty_files": ["reference/ctr_dlrm/jax/model.py"],
                },
            },
        },
    )


def plant_rul001(tree, tmp):
    # A version no levelfield knows; the checker is told the example's, so nothing else changes verdict.
    edit_json(first(tree, "code/levelfield.json"), lambda d: d.update(rules_version="0.9"))
    return {"rules_version": example_rules_version()}


def plant_rul002(tree, tmp):
    edit_json(first(tree, "code/levelfield.json"), lambda d: d.pop("git_commit"))


def plant_rul003(tree, tmp):
    # A well-formed commit (RUL002 quiet), but not the one any run recorded.
    edit_json(first(tree, "code/levelfield.json"), lambda d: d.update(git_commit="0123456789abcdef" * 2 + "01234567"))


def _set_validity(tree, verdict):
    """Repeat 1 judged `verdict` by LoadGen, consistently in its logs and result.json."""
    detail = _detail(tree)
    edit_mllog(detail, "result_validity", set_value(verdict))

    def judged(d):
        d["runs"][0].update(valid=verdict == "VALID", result_validity=verdict)
        # an invalid result is not submittable (the runner's rule; INF017 holds result.json to it)
        d.update(valid=verdict == "VALID", result_validity=verdict, submittable=verdict == "VALID")

    edit_json(_performance(tree) / "result.json", judged)
    summary = detail.parent / "mlperf_log_summary.txt"
    summary.write_text(summary.read_text().replace("Result is : VALID", f"Result is : {verdict}"))


def plant_inf001(tree, tmp):
    _set_validity(tree, "INVALID")


def plant_inf002(tree, tmp):
    with _detail(tree).open("a") as f:
        f.write(loadgen_error_line())

    def counted(d):  # result.json counts the error as the runner would (else INF017 would see the edit)
        d["runs"][0]["loadgen_errors"] += 1
        d["loadgen_errors"] += 1

    edit_json(_performance(tree) / "result.json", counted)


def plant_inf003(tree, tmp):
    def short(entry):
        return {**entry, "value": "01-01-2026 00:00:10.000"}

    edit_mllog(_detail(tree), "power_begin", set_value("01-01-2026 00:00:00.000"))
    edit_mllog(_detail(tree), "power_end", short)


def plant_inf005(tree, tmp):
    for mode in ("performance", "accuracy"):
        edit_mllog(_detail(tree, mode), "loadgen_version", set_value("5.1.0 @ 0123456789"))
    # result.json records the version its logs say (else INF017 would see the edit)
    edit_json(
        _performance(tree) / "result.json",
        lambda d: (
            d.update(loadgen_version="5.1.0 @ 0123456789"),
            d["runs"][0].update(loadgen_version="5.1.0 @ 0123456789"),
        ),
    )
    edit_json(first(tree, "offline/accuracy/result.json"), lambda d: d.update(loadgen_version="5.1.0 @ 0123456789"))


def plant_inf006(tree, tmp):
    edit_json(first(tree, "offline/performance/result.json"), lambda d: d.update(samples_per_s=d["samples_per_s"] * 2))


def plant_inf007(tree, tmp):
    summary = first(tree, "offline/performance/run_1/mlperf_log_summary.txt")
    summary.write_text(summary.read_text().replace("Result is : VALID", "Result is : INVALID"))


def plant_inf017(tree, tmp):
    # The accuracy run of other weights than the timed one.
    edit_json(first(tree, "offline/accuracy/result.json"), lambda d: d.update(weights="runs/other/weights_1.npz"))


def plant_inf018(tree, tmp):
    summary = first(tree, "offline/performance/run_1/mlperf_log_summary.txt")
    text = summary.read_text()
    figure = next(line for line in text.splitlines() if line.startswith("Samples per second:"))
    doubled = f"Samples per second: {float(figure.split(':')[1]) * 2:g}"
    summary.write_text(text.replace(figure, doubled))


def _asked(tree, key: str, logged: str, value) -> None:
    """A performance result run with another setting: every repeat's detail log asks LoadGen for
    `value` (requested_<logged>) and settings.json says so too (else INF016 would see the edit)."""
    for detail in sorted(_performance(tree).glob("run_*/mlperf_log_detail.txt")):
        edit_mllog(detail, f"requested_{logged}", set_value(value))
    edit_json(_performance(tree) / "settings.json", lambda d: d.update({key: value}))


def plant_inf009(tree, tmp):
    for detail in sorted(_performance(tree).glob("run_*/mlperf_log_detail.txt")):
        edit_mllog(detail, "requested_test_mode", set_value("AccuracyOnly"))
    edit_json(_performance(tree) / "settings.json", lambda d: d.update(mode="accuracy"))


def plant_inf010(tree, tmp):
    _asked(tree, "schedule_rng_seed", "schedule_rng_seed", 1)


def plant_inf011(tree, tmp):
    # Asked for the smoke profile's 500 ms; the run itself still lasted its 60 s (INF003 stays quiet).
    _asked(tree, "min_duration_ms", "min_duration_ms", 500)


def plant_inf019(tree, tmp):
    # Every repeat and the run's settings.json say so, so the files agree with each other (INF016) and not
    # with the rules.
    for detail in sorted(_performance(tree).glob("run_*/mlperf_log_detail.txt")):
        edit_mllog(detail, "requested_accuracy_log_probability", set_value(0.1))
    edit_json(_performance(tree) / "settings.json", lambda d: d["accuracy_log"].update(accuracy_log_probability=0.1))


def plant_inf015(tree, tmp):
    edit_mllog(_detail(tree), "effective_performance_issue_same", set_value(True))


def plant_inf016(tree, tmp):
    edit_json(_performance(tree) / "settings.json", lambda d: d.update(min_duration_ms=d["min_duration_ms"] * 2))


def plant_inf012(tree, tmp):
    count = json.loads((_performance(tree) / "settings.json").read_text())["performance_sample_count"]
    _asked(tree, "performance_sample_count", "performance_sample_count_override", count // 8)
    for detail in sorted(_performance(tree).glob("run_*/mlperf_log_detail.txt")):  # the library reports it too
        edit_mllog(detail, "qsl_reported_performance_count", set_value(count // 8))


def _drop_repeats(tree, keep: list[int]) -> Path:
    """Keep only the repeats `keep` of the first performance run; result.json and settings.json say so."""
    from levelfield.ground.stats import spread

    folder = _performance(tree)
    for run in sorted(folder.glob("run_*")):
        if int(run.name[len("run_") :]) not in keep:
            shutil.rmtree(run)

    def kept(d):
        d["runs"] = [entry for entry in d["runs"] if entry["run"] in keep]
        d["repeats"] = len(d["runs"])
        d["statistics"] = spread([entry[d["metric"]] for entry in d["runs"]])
        d[d["metric"]] = d["statistics"]["mean"]

    edit_json(folder / "result.json", kept)
    edit_json(folder / "settings.json", lambda d: d.update(repeats=len(keep)))
    return folder


def plant_inf008(tree, tmp):
    # Two honest repeats where the submission profile asks three: the slow third left out.
    _drop_repeats(tree, keep=[1, 2])


def _accuracy_log(tree):
    return first(tree, "accuracy/mlperf_log_accuracy.json.gz")


def plant_acc001(tree, tmp):
    log = _accuracy_log(tree)
    entries = read_gz_json(log)
    write_gz_json(log, entries[: len(entries) // 2])


def plant_acc002(tree, tmp):
    # A model that answers every sample alike: the log is well formed and the accuracy.json honest,
    # but the quality is below the rules' threshold.
    from levelfield.checker.context import Context
    from levelfield.ground.accuracy import score_entries
    from levelfield.rules import load_suite

    log = _accuracy_log(tree)
    entries = read_gz_json(log)
    entries = [{**e, "data": entries[0]["data"]} for e in entries]
    write_gz_json(log, entries)
    task = load_suite().task(log.parts[-5])
    scored = score_entries(entries, task, Context(load_suite()).labels(task.id))
    edit_json(log.parent / "accuracy.json", lambda d: d.update(value=scored["value"], **{"pass": False}))
    edit_json(log.parent / "result.json", lambda d: d["accuracy"].update(value=scored["value"], **{"pass": False}))


def plant_acc003(tree, tmp):
    edit_json(first(tree, "accuracy/accuracy.json"), lambda d: d.update(value=d["value"] + 0.01))


from tests import (  # noqa: E402 - beside their checks
    cost_plants,
    log_key_plants,
    node_plants,
    provisional_plants,
    signature_plants,
    throughput_plants,
)

_PLANT_MODULES = (cost_plants, log_key_plants, node_plants, provisional_plants, signature_plants, throughput_plants)
_SCOPES = (globals(), *(vars(m) for m in _PLANT_MODULES))
PLANTS = {n[len("plant_") :].upper(): fn for scope in _SCOPES for n, fn in scope.items() if n.startswith("plant_")}


@pytest.mark.parametrize("code", sorted(PLANTS))
def test_planted_defect_gives_exactly_its_code(code, tmp_path, baseline):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    kwargs = PLANTS[code](tree, tmp_path) or {}
    if kwargs.pop("reseal", True):
        reseal(tree)
    assert codes(tree, **kwargs) == baseline | {code}


def test_an_offline_run_shorter_than_its_minimum_says_to_raise_expected_qps(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    plant_inf003(tree, tmp_path)  # the example's runs are all Offline
    reseal(tree)
    short = [f for f in check_tree(tree).active if f.code == "INF003" and "shorter" in f.message]
    assert short and all("raise expected_qps in --user-conf" in f.hint for f in short)
