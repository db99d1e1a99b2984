"""Every value a vendor can edit, edited in a resealed copy of the example: each edit gets its code.

test_checker_fixtures.py plants one defect per check code; this file sweeps the values one check
reads: every LoadGen setting logged under both of its names, every setting of settings.json, every
figure of accuracy.json and result.json's accuracy block, and the training-log values with a domain.
"""

from __future__ import annotations

import pytest
from test_checker_fixtures import EXAMPLE, SETTINGS_CODES, _detail, _performance, _training_log

from levelfield.checker.engine import check_tree
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
        ("performance_issue_unique", _flipped, "INF015"),
        ("performance_issue_same", _flipped, "INF015"),
        ("performance_issue_same_index", _plus_one, "INF015"),
        ("sample_concatenate_permutation", _flipped, "INF015"),
    ]
] + [
    ("requested_performance_sample_count_override", _halved, "INF012"),
    ("effective_performance_sample_count", _halved, "INF012"),
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


def test_every_domain_admits_what_the_trainer_writes_and_refuses_a_string():
    from levelfield.checker.checks.log_values import DOMAINS

    written = {
        "seed": 0,
        "levelfield_run_index": 0,
        "levelfield_world_size": 1,
        "levelfield_submittable": False,
        "levelfield_peak_rss_mib": 512.0,
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
