"""Every value a vendor can edit, edited in a resealed copy of the example: each edit gets its code.

test_checker_fixtures.py plants one defect per check code; this file sweeps the values one check
reads: every LoadGen setting logged under both of its names, every setting of settings.json, every
figure of accuracy.json and result.json's accuracy block, the training-log values with a domain, a
run's status against its evals, every line's epoch number and what each run says ran it.
"""

from __future__ import annotations

import json

import pytest
from test_checker_fixtures import EXAMPLE, _detail, _never_converged, _performance, _training_log
from test_checker_refiled import SETTINGS_CODES

from levelfield.checker.engine import check_tree
from levelfield.ground import mllog_keys as LK
from levelfield.ground.cluster_managers import launcher_record
from tests.node_plants import log_beside_world_size
from tests.submission_edit import copy_tree, edit_json, edit_mllog, first, reseal, set_value


# --- every logged setting of an Offline run, edited in a copy of the example ------------------------
# (detail-log key, how the edit changes its value, the code that must catch it). Values derive from the
# logged ones, so the edits follow the rules; the run is resealed, so only the edit is wrong.
def _plus_one(value):
    return value + 1


def _halved(value):
    return value // 2


def _flipped(value):
    return not value


LOGGED_SETTING_EDITS = [
    (f"{kind}_{key}", change, code)
    for kind in ("requested", "effective")
    for key, change, code in [
        ("scenario", lambda v: "Server", "INF009"),
        ("test_mode", lambda v: "AccuracyOnly", "INF009"),
        ("qsl_rng_seed", _plus_one, "INF010"),
        ("sample_index_rng_seed", _plus_one, "INF010"),
        ("schedule_rng_seed", _plus_one, "INF010"),
        ("min_duration_ms", _halved, "INF011"),
        ("min_query_count", lambda v: v - 1, "INF011"),
        ("performance_issue_unique", _flipped, "INF015"),
        ("performance_issue_same", _flipped, "INF015"),
        ("performance_issue_same_index", _plus_one, "INF015"),
        ("sample_concatenate_permutation", _flipped, "INF015"),
        ("accuracy_log_rng_seed", _plus_one, "INF019"),
        ("accuracy_log_probability", lambda v: 0.5, "INF019"),
        ("accuracy_log_sampling_target", _plus_one, "INF019"),
    ]
] + [
    ("requested_performance_sample_count_override", _halved, "INF012"),
    ("effective_performance_sample_count", _halved, "INF012"),
    ("requested_accuracy_sample_count_override", lambda v: 100, "INF012"),
    ("effective_accuracy_sample_count", _halved, "INF012"),
]


@pytest.mark.parametrize("key, change, code", LOGGED_SETTING_EDITS, ids=[e[0] for e in LOGGED_SETTING_EDITS])
def test_an_edited_logged_setting_gives_its_code(key, change, code, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_detail(tree), key, lambda entry: {**entry, "value": change(entry["value"])})
    reseal(tree)
    found = {f.code for f in check_tree(tree, select=SETTINGS_CODES).active}
    assert found == {code}


# settings.json key -> its edited value; each must be caught by INF016 (the detail logs disagree).
SETTINGS_FILE_EDITS = {
    "scenario": lambda v: "server",
    "mode": lambda v: "accuracy",
    "min_duration_ms": _halved,
    "min_query_count": _plus_one,
    "max_duration_ms": _plus_one,
    "qsl_rng_seed": _plus_one,
    "schedule_rng_seed": _plus_one,
    "performance_sample_count": _halved,
    "dataset_samples": _halved,
    "task": lambda v: "fmnist-resnet",
    "rules_version": lambda v: "0.9",
    "profile": lambda v: "demo",
    "submittable": _flipped,
    "min_sample_count": _halved,
    "repeats": _plus_one,
}


@pytest.mark.parametrize("key", sorted(SETTINGS_FILE_EDITS))
def test_an_edited_settings_file_gives_inf016(key, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    settings = _performance(tree) / "settings.json"
    edit_json(settings, lambda d: d.update({key: SETTINGS_FILE_EDITS[key](d[key])}))
    reseal(tree)
    findings = check_tree(tree, select=["INF016"]).active
    assert findings and all(key in f.message for f in findings)


def test_the_query_stream_in_settings_json_is_compared_with_the_logs():
    from levelfield.checker.checks.settings_file import expected_logs

    logged = {key: want for _, key, want in expected_logs({"query_stream": {"performance_issue_same": False}})}
    assert logged == {"requested_performance_issue_same": False}


# A logged value the trainer cannot write, per key of log_values.DOMAINS that the example's logs hold.
OUT_OF_DOMAIN = {
    "seed": 2**31,
    "levelfield_run_index": -1,
    "levelfield_world_size": 0,
    "levelfield_submittable": 0,
    "levelfield_time_to_first_step_s": -0.5,
    "levelfield_peak_rss_mib": "1.0",
}


@pytest.mark.parametrize("key", sorted(OUT_OF_DOMAIN))
def test_a_logged_value_outside_its_domain_gives_trn017(key, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_training_log(tree, 1), key, set_value(OUT_OF_DOMAIN[key]))
    reseal(tree)
    findings = check_tree(tree, select=["TRN017"]).active
    assert [(f.code, key in f.message) for f in findings] == [("TRN017", True)]


@pytest.mark.parametrize(
    "launcher, codes",
    [
        (launcher_record("slurm", "41", "0"), set()),  # as `srun levelfield train` logs it
        (launcher_record("openmpi", "1358233600"), set()),
        (launcher_record("pbs", "7"), {"TRN017", "STR010"}),  # a starter the trainer does not know
        (launcher_record("slurm"), {"TRN017", "STR010"}),  # a manager without its job id
        (launcher_record("torchrun", "41"), {"TRN017", "STR010"}),  # a job id without a manager
    ],
)
def test_a_logged_launcher_is_held_to_what_the_trainer_writes(launcher, codes, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    log_beside_world_size(_training_log(tree, 1), LK.LAUNCHER, launcher)
    reseal(tree)
    assert {f.code for f in check_tree(tree).active} == codes


def test_every_domain_admits_what_the_trainer_writes_and_refuses_a_string():
    from levelfield.checker.checks.log_values import DOMAINS

    written = {
        "seed": 0,
        "levelfield_run_index": 0,
        "levelfield_world_size": 1,
        "levelfield_nodes": 1,
        "levelfield_local_batch_size": 256,
        "levelfield_train_samples_per_s": 1200.0,
        "levelfield_step_time_ms": 5.0,
        "levelfield_submittable": False,
        "levelfield_peak_rss_mib": 512.0,
        "levelfield_launcher": launcher_record("levelfield"),
        "levelfield_sample_interval_ms": 100,
        "levelfield_peak_tree_rss_mib": 812.5,
        "levelfield_tree_processes": 3,
        "levelfield_others_cpu_share": 0.03,
        "levelfield_cpu_energy_j": "not measured",  # the string a run without a meter writes
        "levelfield_scaling_efficiency": 0.92,
        "levelfield_scaling_reference": {
            "world_size": 1,
            "train_samples_per_s": 1300.0,
            "runs": 1,
            "seeds": [7],
            "folder": "scaling_reference",
        },
    }
    for key, (domain, ok) in DOMAINS.items():
        assert ok(written.get(key, 0.0)), (key, domain)
        assert not ok("1"), key


# accuracy.json (and result.json's accuracy block) field -> an edited value; each must be ACC003's.
ACCURACY_EDITS = {
    "metric": lambda v: "top1_accuracy",
    "value": lambda v: v + 0.01,
    "reference_value": lambda v: v * 0.9,
    "accuracy_ratio": lambda v: 0.5,
    "threshold": lambda v: v * 0.5,
    "pass": lambda v: not v,
    "samples": _halved,
}


@pytest.mark.parametrize("name", ["accuracy.json", "result.json"])
@pytest.mark.parametrize("key", sorted(ACCURACY_EDITS))
def test_an_edited_accuracy_figure_gives_acc003(name, key, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")

    def edit(data):
        block = data if name == "accuracy.json" else data["accuracy"]
        block[key] = ACCURACY_EDITS[key](block[key])

    edit_json(first(tree, f"accuracy/{name}"), edit)
    reseal(tree)
    findings = check_tree(tree, select=["ACC003"]).active
    assert [(f.code, f.message.split(" ")[0], f.path.endswith(name)) for f in findings] == [("ACC003", key, True)]


# A training log's header value -> an edit that files the log somewhere else; each must be TRN003's.
HEADER_EDITS = {
    "levelfield_run_index": 1,  # result_2.txt says it is run 1
    "submission_status": "rdi",  # the description says "available"
    "submission_division": "open",
}


@pytest.mark.parametrize("key", sorted(HEADER_EDITS))
def test_an_edited_log_header_gives_trn003(key, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_training_log(tree, 2), key, set_value(HEADER_EDITS[key]))
    reseal(tree)
    findings = check_tree(tree).active
    assert [(f.code, f.message.split(" ")[0]) for f in findings] == [("TRN003", key)]


# --- a run's status against its evals (TRN018) ------------------------------------------------------
def test_the_target_comparison_is_the_trainers():
    from levelfield.ground.training_log import reaches_target

    assert reaches_target(0.82, 0.82) and reaches_target(0.9, 0.82)
    for value in (0.8199999, float("nan"), float("inf"), "0.9", True, None, [0.9]):
        assert not reaches_target(value, 0.82), value


def _stop_metadata(change):
    return lambda e: {**e, "metadata": change(dict(e["metadata"]))}


@pytest.mark.parametrize(
    "name, change",
    [
        ("aborted", lambda m: {**m, "status": "aborted"}),
        ("no status", lambda m: {k: v for k, v in m.items() if k != "status"}),
    ],
)
def test_a_run_that_reached_the_target_but_does_not_say_success_gives_trn018(name, change, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_training_log(tree, 1), "run_stop", _stop_metadata(change))
    reseal(tree)
    findings = check_tree(tree, select=["TRN018"]).active
    assert [(f.code, f.path.endswith("result_1.txt")) for f in findings] == [("TRN018", True)]


@pytest.mark.parametrize("value", [0.5, float("nan")])
def test_an_aborted_run_whose_evals_stayed_below_the_target_is_not_trn018(value, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    _never_converged(_training_log(tree, 1), value)
    reseal(tree)
    assert check_tree(tree, select=["TRN018"]).active == []


# --- epoch numbers: each line that names its epoch, edited one way at a time (TRN019) ---------------
def _epoch_num(value):
    return lambda e: {**e, "metadata": {**e["metadata"], "epoch_num": value}}


def _no_epoch_num(entry):
    return {**entry, "metadata": {k: v for k, v in entry["metadata"].items() if k != "epoch_num"}}


# The first occurrence of each key belongs to epoch 1; True and 1.0 equal 1 in Python, not in a log.
EPOCH_NUM_EDITS = {
    "absent": _no_epoch_num,
    "a string": _epoch_num("1"),
    "a boolean": _epoch_num(True),
    "a float": _epoch_num(1.0),
    "another epoch": _epoch_num(2),
}


@pytest.mark.parametrize("edit", sorted(EPOCH_NUM_EDITS))
@pytest.mark.parametrize("key", ["epoch_stop", "eval_start", "eval_accuracy", "eval_stop"])
def test_an_edited_epoch_num_gives_trn019(key, edit, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_training_log(tree), key, EPOCH_NUM_EDITS[edit])
    reseal(tree)
    findings = check_tree(tree, select=["TRN019"]).active
    assert [(f.code, f.message.split(" ")[0]) for f in findings] == [("TRN019", key)]


def test_lines_of_an_epoch_without_its_epoch_start_give_trn019(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_training_log(tree), "epoch_start", lambda e: None)
    reseal(tree)
    findings = check_tree(tree, select=["TRN019"]).active
    # Every line of epoch 1 (an end-of-epoch evaluation and, in rules 1.1, the ones within it) is named.
    orphans = []
    for text in _training_log(tree).read_text(encoding="utf-8").splitlines():
        key = json.loads(text.split("MLLOG", 1)[1])["key"] if "MLLOG" in text else None
        if key == "epoch_start":
            break
        if key in ("epoch_stop", "eval_start", "eval_accuracy", "eval_stop"):
            orphans.append(key)
    assert {"epoch_stop", "eval_start", "eval_accuracy", "eval_stop"} <= set(orphans)
    assert [f.message for f in findings] == [f"{key} no epoch_start before it" for key in orphans]


def test_an_epoch_start_without_an_integer_epoch_num_is_trn014_alone(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_training_log(tree), "epoch_start", _epoch_num("1"))
    reseal(tree)
    assert {f.code for f in check_tree(tree, select=["TRN014", "TRN019"]).active} == {"TRN014"}


# --- files against each other: environment.json, code/levelfield.json, result.json, the summary -------
def _codes_after(tree) -> set[str]:
    reseal(tree)
    return {f.code for f in check_tree(tree).active}


def _set_at(data: dict, dotted: str, change) -> None:
    """data[a][b]... = change(old value) for dotted "a.b"; "runs.0.x" indexes a list."""
    *parents, last = dotted.split(".")
    for part in parents:
        data = data[int(part)] if isinstance(data, list) else data[part]
    data[last] = change(data[last])


# environment.json field -> an edited value; the runs recorded the original, so each is REP001's alone.
# (Its levelfield version and commit are also the code reference's: RUL003 sees those too.)
ENVIRONMENT_EDITS = {
    "python": lambda v: -1,
    "framework": lambda v: "pytorch",
    "packages.jax": lambda v: "0.0.1",
    "packages.numpy": lambda v: "1.0",
    "digest": lambda v: "0" * 64,
}


@pytest.mark.parametrize("key", sorted(ENVIRONMENT_EDITS))
def test_an_edited_environment_file_gives_rep001(key, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_json(first(tree, "/jax/environment.json"), lambda d: _set_at(d, key, ENVIRONMENT_EDITS[key]))
    found = _codes_after(tree)
    # SYS006 also holds the description's software to environment.json; STR010 a value of another type.
    assert "REP001" in found and found <= {"REP001", "SYS006", "STR010"}
    findings = check_tree(tree, select=["REP001"]).active
    assert findings and all(key.split(".")[0] in f.message for f in findings)


def test_a_run_environment_edited_without_its_digest_gives_rep001(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(
        _training_log(tree, 1),
        "levelfield_environment",
        lambda e: {**e, "value": {**e["value"], "packages": {**e["value"]["packages"], "numpy": "1.0"}}},
    )
    assert _codes_after(tree) == {"REP001"}


def test_whether_the_checkout_was_modified_is_not_rep001s(tmp_path):
    """Runs of one commit may differ in the dirty flag (REP003 judges it); it is not in the digest."""
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_json(first(tree, "/jax/environment.json"), lambda d: d["levelfield_git"].update(dirty_files=["x.py"]))
    assert _codes_after(tree) == set()


# code/levelfield.json field -> a well-formed value (RUL002 quiet) that no run recorded
CODE_REF_EDITS = [
    ("levelfield_version", "1.0"),
    ("levelfield_version", "0.0.9"),
    ("git_commit", "f" * 40),
    ("git_commit", None),  # what a tree packaged outside a git checkout says
]


@pytest.mark.parametrize("key, value", CODE_REF_EDITS)
def test_an_edited_code_reference_gives_rul003(key, value, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_json(first(tree, "code/levelfield.json"), lambda d: d.update({key: value}))
    assert _codes_after(tree) == {"RUL003"}
    findings = check_tree(tree, select=["RUL003"]).active
    assert [(f.message.split(" ")[0], f.path.endswith("code/levelfield.json")) for f in findings] == [(key, True)]


# result.json field -> an edited value of the type the runner writes; each must be INF017's alone
RESULT_EDITS = {
    "framework_version": lambda v: "0.0.1",
    "profile": lambda v: "smoke",
    "submittable": lambda v: not v,
    "dataset_samples": _halved,
    "loadgen_version": lambda v: "6.0.17 @ 0000000000",
    "loadgen_errors": _plus_one,
    "loadgen_version_expected": lambda v: "6.0.16",
    "weights": lambda v: "runs/other/weights_1.npz",
}
RESULT_FIELD_EDITS = [(mode, key) for mode in ("performance", "accuracy") for key in sorted(RESULT_EDITS)] + [
    ("performance", "runs.1.loadgen_version"),
    ("performance", "runs.1.loadgen_errors"),
]


@pytest.mark.parametrize("mode, key", RESULT_FIELD_EDITS)
def test_an_edited_result_record_gives_inf017(mode, key, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    change = RESULT_EDITS[key.split(".")[-1]]
    edit_json(first(tree, f"offline/{mode}/result.json"), lambda d: _set_at(d, key, change))
    assert _codes_after(tree) == {"INF017"}
    findings = check_tree(tree, select=["INF017"]).active
    shown = key.replace("runs.1.", "runs[1].")
    assert findings and all(f.message.startswith(shown.split(".")[0]) for f in findings)


def test_a_result_field_of_another_type_is_left_to_the_shape_checks(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_json(first(tree, "offline/performance/result.json"), lambda d: d.update(submittable=-1, profile=0))
    assert check_tree(tree, select=["INF017"]).active == []


def test_an_epoch_number_that_is_a_boolean_gives_trn014(tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_training_log(tree, 1), "epoch_start", lambda e: {**e, "metadata": {**e["metadata"], "epoch_num": True}})
    reseal(tree)
    assert "TRN014" in {f.code for f in check_tree(tree).active}


# loaded_qsl_set edits: the working set must stay the rules' number of distinct eval-set samples.
QSL_SET_EDITS = {
    "a repeated sample": lambda s: [s[0], *s[:-1]],
    "a sample outside the eval set": lambda s: [*s[:-1], 10**9],
    "a sample that is not an integer": lambda s: [*s[:-1], "7"],
    "a sample fewer": lambda s: s[:-1],
}


@pytest.mark.parametrize("edit", sorted(QSL_SET_EDITS))
def test_an_edited_loaded_sample_set_gives_inf012(edit, tmp_path):
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    edit_mllog(_detail(tree), "loaded_qsl_set", lambda e: {**e, "value": QSL_SET_EDITS[edit](e["value"])})
    reseal(tree)
    findings = check_tree(tree, select=SETTINGS_CODES).active
    assert [(f.code, f.message.split(" ")[0]) for f in findings] == [("INF012", "loaded_qsl_set")]


def test_the_weights_digest_tells_an_accuracy_run_of_other_weights_apart(tmp_path):
    # Same label, other file: only the SHA-256 result.json records shows it.
    tree = copy_tree(EXAMPLE, tmp_path / "sub")
    accuracy, performance = first(tree, "offline/accuracy/result.json"), first(tree, "offline/performance/result.json")
    recorded = {json.loads(p.read_text())["weights_sha256"] for p in (accuracy, performance)}
    assert len(recorded) == 1  # the example: one digest on both sides, and it checks clean
    edit_json(accuracy, lambda d: d.pop("weights_sha256"))
    edit_json(performance, lambda d: d.update(weights_sha256="a" * 64))
    reseal(tree)
    assert {f.code for f in check_tree(tree).active} == set()  # recorded on one side only: nothing to compare
    edit_json(accuracy, lambda d: d.update(weights_sha256="b" * 64))
    reseal(tree)
    findings = [f for f in check_tree(tree).active if f.code == "INF017"]
    assert findings and all("weights_sha256 differs from the accuracy run's" in f.message for f in findings)
