"""levelfield.ground.rcp: reference convergence statistics against hand-computed numbers and against
mlperf_logging's own RCP checker on real MLPerf reference convergence points."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from levelfield.ground.rcp import (
    ReferencePoint,
    interpolate,
    min_acceptable_mean,
    pooled_epochs,
    population_stdev,
    reference_at,
    reference_point,
    reference_points,
)

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "mlperf-corpus" / "logging" / "mlperf_logging" / "rcp_checker"

# Student's t quantile t(0.95, df=4) from a printed table (one-sided 5%, 4 degrees of freedom).
T_95_DF4 = 2.131847


def test_a_point_is_the_olympic_mean_the_population_stdev_and_the_kept_runs():
    point = reference_point(256, [5.0, 1.0, 3.0, 4.0, 2.0], drop=1)
    assert point.mean_epochs == 3.0  # (2 + 3 + 4) / 3: 1 and 5 dropped
    assert point.stdev_epochs == pytest.approx(math.sqrt(2.0))  # over all five: (4 + 1 + 0 + 1 + 4) / 5
    assert point.n_runs == 3
    assert point.interpolated_from is None


def test_population_stdev_divides_by_n():
    assert population_stdev([2.0, 4.0]) == 1.0
    assert population_stdev([7.5]) == 0.0
    with pytest.raises(ValueError):
        population_stdev([])


def test_min_acceptable_mean_by_hand():
    # mean 3, stdev sqrt(2), n_ref 3, n_sub 3: 3 - t(0.95, 4) * sqrt(2) * sqrt(1/3 + 1/3) = 0.53835
    point = ReferencePoint(256, 3.0, math.sqrt(2.0), 3)
    expected = 3.0 - T_95_DF4 * math.sqrt(2.0) * math.sqrt(2 / 3)
    assert min_acceptable_mean(point, submission_runs=3, alpha=0.05) == pytest.approx(expected, abs=1e-5)
    assert expected == pytest.approx(0.53835, abs=1e-5)


def test_a_stricter_alpha_and_more_runs_move_the_floor_the_right_way():
    point = ReferencePoint(256, 3.0, 0.5, 13)
    floor = min_acceptable_mean(point, 3, 0.05)
    assert min_acceptable_mean(point, 3, 0.01) < floor < 3.0  # rarer false alarms: a lower floor
    assert floor < min_acceptable_mean(point, 8, 0.05) < 3.0  # more submission runs: a tighter floor


def test_the_floor_is_where_the_one_sided_equal_variance_test_turns():
    from scipy import stats

    point = ReferencePoint(512, 2.4, 0.35, 13)
    floor = min_acceptable_mean(point, 3, 0.05)

    def p_faster(mean_epochs):
        t, p = stats.ttest_ind_from_stats(mean_epochs, 0.35, 3, 2.4, 0.35, 13, equal_var=True)
        return p / 2 if t < 0 else 1 - p / 2

    assert p_faster(floor) == pytest.approx(0.05, abs=1e-9)
    assert p_faster(floor - 1e-3) < 0.05 < p_faster(floor + 1e-3)


def test_no_spread_makes_the_mean_the_floor_and_the_floor_never_goes_below_zero():
    assert min_acceptable_mean(ReferencePoint(256, 2.5, 0.0, 3), 3, 0.05) == 2.5
    assert min_acceptable_mean(ReferencePoint(256, 0.5, 3.0, 3), 3, 0.05) == 0.0


def test_min_acceptable_mean_refuses_what_has_no_t_test():
    with pytest.raises(ValueError):
        min_acceptable_mean(ReferencePoint(256, 2.0, 0.5, 1), 1, 0.05)
    with pytest.raises(ValueError):
        min_acceptable_mean(ReferencePoint(256, 2.0, 0.5, 3), 3, 0.0)


def test_interpolation_is_linear_in_batch_size_with_the_smaller_n():
    low, high = ReferencePoint(256, 2.0, 0.5, 13), ReferencePoint(512, 3.0, 1.0, 8)
    point = interpolate(low, high, 320)  # a quarter of the way
    assert (point.mean_epochs, point.stdev_epochs, point.n_runs) == (2.25, 0.625, 8)
    assert point.interpolated_from == (256, 512)
    with pytest.raises(ValueError):
        interpolate(low, high, 512)


def test_reference_at_is_exact_interpolated_or_none_outside_the_range():
    points = [ReferencePoint(1024, 4.0, 1.0, 13), ReferencePoint(256, 2.0, 0.5, 13), ReferencePoint(512, 3.0, 1, 8)]
    assert reference_at(points, 512) is points[2]
    assert reference_at(points, 768).mean_epochs == 3.5  # between 512 and 1024, not 256 and 1024
    assert reference_at(points, 768).interpolated_from == (512, 1024)
    assert reference_at(points, 128) is None
    assert reference_at(points, 2048) is None


def test_reference_points_pool_the_frameworks_and_sort_by_batch_size():
    rules = {
        "points": [
            {"global_batch_size": 512, "epochs_to_target": {"pytorch": [3.0, 3.5], "jax": [2.5, 3.0, 4.0]}},
            {"global_batch_size": 256, "epochs_to_target": {"pytorch": [2.25, 2.5, 3.0, 2.75, 2.5]}},
        ]
    }
    assert pooled_epochs(rules["points"][0]["epochs_to_target"]) == [3.0, 3.5, 2.5, 3.0, 4.0]
    points = reference_points(rules, drop=1)
    assert [p.global_batch_size for p in points] == [256, 512]
    assert points[1].mean_epochs == pytest.approx((3.0 + 3.5 + 3.0) / 3)  # 2.5 and 4.0 dropped
    assert points[0].mean_epochs == pytest.approx((2.5 + 2.5 + 2.75) / 3)


# --- against mlperf_logging's RCP checker on MLPerf's own reference convergence points ------------


def _mlperf_checker(path: Path, ruleset: str, benchmark: str):
    pytest.importorskip("mlperf_logging.rcp_checker.rcp_checker")
    from mlperf_logging.rcp_checker.rcp_checker import RCP_Checker

    with path.open() as f:
        return RCP_Checker("training", ruleset, benchmark, verbose=False, rcp_file=f)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"mlperf corpus not found at {CORPUS}")
def test_min_acceptable_mean_matches_mlperf_logging_on_resnet_rcps():
    path = CORPUS / "training_4.0.0" / "rcps_resnet.json"
    theirs = _mlperf_checker(path, "4.0.0", "resnet")
    submission_runs = theirs.submission_runs - 2  # resnet: 5 runs, olympic mean of 3
    assert theirs.rcp_data
    for name, record in json.loads(path.read_text()).items():
        point = reference_point(record["BS"], record["Epochs to converge"], drop=1)
        ours = min_acceptable_mean(point, submission_runs, theirs.alpha)
        # theirs binary-searches to within its tolerance (1e-4 epochs); ours is the closed form
        assert ours == pytest.approx(theirs.rcp_data[name]["Min Epochs"], abs=2 * theirs.tolerance), name
        assert point.mean_epochs == pytest.approx(theirs.rcp_data[name]["RCP Mean"])
        assert point.stdev_epochs == pytest.approx(theirs.rcp_data[name]["RCP Stdev"])


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"mlperf corpus not found at {CORPUS}")
def test_interpolated_mean_and_stdev_match_mlperf_logging():
    path = CORPUS / "training_4.0.0" / "rcps_resnet.json"
    theirs = _mlperf_checker(path, "4.0.0", "resnet")
    records = sorted(theirs.rcp_data.values(), key=lambda r: r["BS"])
    low, high = records[0], records[1]
    size = (low["BS"] + high["BS"]) // 2
    _, their_point = theirs._create_interp_rcp(size, low, high)
    ours = interpolate(
        ReferencePoint(low["BS"], low["RCP Mean"], low["RCP Stdev"], 1),
        ReferencePoint(high["BS"], high["RCP Mean"], high["RCP Stdev"], 1),
        size,
    )
    assert ours.mean_epochs == pytest.approx(their_point["RCP Mean"])
    assert ours.stdev_epochs == pytest.approx(their_point["RCP Stdev"])
