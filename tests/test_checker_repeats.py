"""Performance repeats in a submission tree: every repeat's logs are read, result.json's per-run values and
statistics are recomputed from them, and the repeat count is held against the rules.

Each test plants one defect into a copy of the example (submissions/example, whose Offline performance
results hold the submission profile's 3 repeats in run_1/ .. run_3/) and expects the finding that names it.
The one-defect-one-code fixtures of INF006 and INF008 are in test_checker_fixtures.py; these are the
variants behind them.
"""

from __future__ import annotations

import json
import shutil

import pytest

from levelfield.checker.engine import check_tree
from tests.submission_edit import copy_tree, edit_json, edit_mllog, first, loadgen_error_line, reseal, set_value
from tests.test_checker_fixtures import EXAMPLE, _drop_repeats, _performance

RUN_3_DETAIL = "offline/performance/run_3/mlperf_log_detail.txt"


@pytest.fixture
def tree(tmp_path):
    return copy_tree(EXAMPLE, tmp_path / "sub")


@pytest.fixture(scope="module")
def baseline() -> set[str]:
    return {f.code for f in check_tree(EXAMPLE).active}


def findings(tree, **kwargs):
    reseal(tree)
    return check_tree(tree, **kwargs).active


def test_the_example_holds_three_repeats_per_performance_result():
    for result in EXAMPLE.rglob("performance/result.json"):
        assert sorted(p.name for p in result.parent.iterdir()) == [
            "result.json",
            "run_1",
            "run_2",
            "run_3",
            "settings.json",
        ]
        data = json.loads(result.read_text())
        assert data["repeats"] == len(data["runs"]) == data["statistics"]["n"] == 3


# --- every repeat's logs are read --------------------------------------------------------------------


def test_an_error_in_the_last_repeat_is_found_in_that_repeats_log(tree, baseline):
    detail = first(tree, RUN_3_DETAIL)
    with detail.open("a") as f:
        f.write(loadgen_error_line())
    result = _performance(tree) / "result.json"
    uncounted = {(f.code, f.message) for f in findings(tree) if f.code not in baseline and f.code != "INF002"}
    assert uncounted == {  # result.json's count of that repeat, and of them all
        ("INF017", "runs[2].loadgen_errors differs from run_3/mlperf_log_detail.txt's is_error lines"),
        ("INF017", "loadgen_errors differs from the is_error lines of the 3 repeats' detail logs"),
    }

    def counted(d):  # result.json counts the error as the runner would
        d["runs"][2]["loadgen_errors"] += 1
        d["loadgen_errors"] += 1

    edit_json(result, counted)
    found = [f for f in findings(tree) if f.code not in baseline]
    assert [(f.code, f.path) for f in found] == [("INF002", detail.relative_to(tree).as_posix())]
    assert found[0].line == len(detail.read_text().splitlines())


def test_a_later_repeat_judged_invalid_is_found_however_valid_the_first(tree, baseline):
    detail = first(tree, RUN_3_DETAIL)
    edit_mllog(detail, "result_validity", set_value("INVALID"))
    found = {(f.code, f.path) for f in findings(tree) if f.code not in baseline}
    where = detail.relative_to(tree).as_posix()
    assert ("INF001", where) in found
    assert ("INF007", where.replace("detail", "summary")) in found  # run_3's summary still says VALID
    assert {code for code, _ in found} == {"INF001", "INF006", "INF007"}  # result.json: runs[2] and valid


# --- INF006: result.json against the repeats --------------------------------------------------------


def _inf006(tree) -> list[str]:
    return [f.message for f in findings(tree) if f.code == "INF006"]


def test_one_repeats_value_edited_in_result_json_is_caught(tree):
    edit_json(_performance(tree) / "result.json", lambda d: d["runs"][1].update(samples_per_s=1.0))
    assert _inf006(tree) == ["runs[1].samples_per_s differs from run_2/mlperf_log_detail.txt"]


def test_a_narrowed_confidence_interval_is_caught(tree):
    def narrower(d):
        d["statistics"]["ci95_low"] = d["statistics"]["mean"] * 0.999

    edit_json(_performance(tree) / "result.json", narrower)
    assert _inf006(tree) == [
        "statistics.ci95_low differs from levelfield.ground.stats.spread over the 3 repeats' mlperf_log_detail.txt"
    ]


def test_a_dropped_slow_repeat_with_the_mean_left_alone_is_caught(tree):
    """result.json edited to claim the mean of its two best repeats: the logs say otherwise."""

    def best_two(d):
        values = sorted(entry[d["metric"]] for entry in d["runs"])
        d[d["metric"]] = sum(values[1:]) / 2

    edit_json(_performance(tree) / "result.json", best_two)
    assert _inf006(tree) == ["samples_per_s (the mean) differs from the mean of the 3 repeats' mlperf_log_detail.txt"]


def test_valid_must_be_every_repeat_valid(tree):
    detail = first(tree, RUN_3_DETAIL)
    edit_mllog(detail, "result_validity", set_value("INVALID"))
    edit_json(_performance(tree) / "result.json", lambda d: d["runs"][2].update(valid=False))  # runs[2] honest
    assert _inf006(tree) == ["valid differs from 'every repeat VALID' in LoadGen's logs"]


# --- INF008: the repeat count -----------------------------------------------------------------------


def test_a_gap_in_the_repeats_is_inf008_and_nothing_else(tree, baseline):
    folder = _drop_repeats(tree, keep=[1, 3])
    found = [f for f in findings(tree) if f.code not in baseline]
    assert {f.code for f in found} == {"INF008"}
    gap = next(f for f in found if "without gaps" in f.message)
    assert gap.path == folder.relative_to(tree).as_posix()
    assert (gap.found, gap.expected) == ('["run_1", "run_3"]', '["run_1", "run_2"]')


def test_result_json_claiming_more_repeats_than_its_folders_is_inf008(tree, baseline):
    edit_json(_performance(tree) / "result.json", lambda d: d.update(repeats=4))
    found = [f for f in findings(tree) if f.code not in baseline]
    assert [(f.code, f.message, f.found, f.expected) for f in found] == [
        ("INF008", "repeats differs from the run_<i>/ folders", "4", "3")
    ]


def test_the_count_is_judged_against_the_checked_profile():
    """The smoke profile asks one repeat: the example's three are too many for it."""
    found = check_tree(EXAMPLE, select=["INF008"], profile="smoke").active
    assert found and all(f.message == "3 repeats where the rules' smoke profile asks 1" for f in found)
    assert all("--profile smoke" in f.hint for f in found)
    assert check_tree(EXAMPLE, select=["INF008"]).active == []


# --- the loader: what lies where ---------------------------------------------------------------------


def test_an_old_layout_performance_folder_is_reported_as_such(tree):
    folder = _performance(tree)
    for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt"):
        shutil.move(folder / "run_1" / name, folder / name)
    for repeat in folder.glob("run_*"):
        shutil.rmtree(repeat)
    found = findings(tree)
    flat = [f for f in found if f.code == "STR002" and f.path.startswith(folder.relative_to(tree).as_posix())]
    assert len(flat) == 2 and all("belongs in its repeat's folder run_<i>/" in f.message for f in flat)
    assert ("STR001", f"{folder.relative_to(tree).as_posix()}/run_1") in {(f.code, f.path) for f in found}


@pytest.mark.parametrize("name", ["run_0", "run_01", "run_x", "Run_1", "extra"])
def test_a_folder_not_named_run_i_is_not_a_repeat(tree, name):
    folder = _performance(tree)
    shutil.copytree(folder / "run_1", folder / name)
    found = [f for f in findings(tree) if f.code == "STR002"]
    assert {f.path.rsplit("/", 2)[-2] for f in found} == {name}
    assert all("expected run_<i>/ with i = 1, 2, ..." in f.message for f in found)


def test_an_accuracy_run_has_no_repeat_folders(tree):
    accuracy = first(tree, "offline/accuracy/result.json").parent
    shutil.copytree(_performance(tree) / "run_1", accuracy / "run_1")
    found = [f for f in findings(tree) if f.code == "STR002"]
    assert len(found) == 2 and all("an accuracy run is one LoadGen run" in f.message for f in found)


def test_a_repeat_missing_its_detail_log_is_str001_at_that_path(tree):
    detail = first(tree, RUN_3_DETAIL)
    detail.unlink()
    found = [(f.code, f.path) for f in findings(tree) if f.code.startswith("STR")]
    assert found == [("STR001", detail.relative_to(tree).as_posix())]
