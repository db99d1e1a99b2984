"""Statistics pinned on small known inputs."""

import pytest

from levelfield.ground.stats import (
    confidence_interval,
    olympic_mean,
    olympic_score,
    shown_time_to_train,
    stdev,
    time_to_train,
    welch_test,
)


def test_olympic_mean_drops_best_and_worst():
    assert olympic_mean([30.0, 29.0, 31.0, 30.0, 45.0], drop=1) == pytest.approx(91.0 / 3)
    assert olympic_mean([1.0, 2.0, 3.0], drop=0) == 2.0
    with pytest.raises(ValueError, match="leaves none"):
        olympic_mean([1.0, 2.0], drop=1)


def test_stdev_and_ci():
    values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    assert stdev(values) == pytest.approx(2.138089935299395)
    low, high = confidence_interval(values)
    # mean 5, t(0.975, 7) = 2.364624252, sem = 2.1380899 / sqrt(8)
    assert (low, high) == (pytest.approx(3.2125120818, rel=1e-9), pytest.approx(6.7874879182, rel=1e-9))
    assert confidence_interval([3.0]) is None


def test_time_to_train_counts_a_failed_run_as_the_slowest_and_spreads_the_successful_ones():
    t = time_to_train([20.0, 21.0, 22.0, 23.0, None], drop=1)
    # MLPerf: drop 20 and the failed run -> mean(21, 22, 23) = 22; among successes only it would be 21.5.
    assert t["olympic_mean"] == pytest.approx(22.0)
    assert (t["n"], t["mean"], t["single_run_s"], t["olympic_drop"]) == (4, pytest.approx(21.5), None, 1)
    assert (t["ci95_low"], t["ci95_high"]) == confidence_interval([20.0, 21.0, 22.0, 23.0])
    assert shown_time_to_train(t) == (pytest.approx(22.0), "olympic mean")


def test_a_single_run_is_shown_as_a_single_run_not_an_olympic_mean():
    t = time_to_train([12.5], drop=1)
    assert t == {
        "olympic_mean": None,
        "single_run_s": 12.5,
        "mean": 12.5,
        "stdev": 0.0,
        "ci95_low": None,
        "ci95_high": None,
        "n": 1,
        "olympic_drop": 1,
    }
    assert shown_time_to_train(t) == (12.5, "single run")
    failed = time_to_train([None], drop=1)
    assert (failed["single_run_s"], failed["mean"], failed["n"]) == (None, None, 0)
    assert shown_time_to_train(failed) == (None, None)
    assert shown_time_to_train(time_to_train([10.0, 11.0], drop=1)) == (None, None)  # two runs: neither


def test_olympic_score_counts_a_failed_run_as_the_slowest():
    # MLPerf: the failed run is the dropped worst, so the fastest success is dropped as the best.
    assert olympic_score([10.0, 11.0, 12.0, 13.0, None], drop=1) == pytest.approx(12.0)
    assert olympic_score([30.0, 29.0, 31.0, 30.0, 45.0], drop=1) == pytest.approx(91.0 / 3)
    assert olympic_score([10.0, None, 12.0, 13.0, None], drop=1) is None  # a failed run would be kept
    assert olympic_score([10.0, 11.0], drop=1) is None


def test_welch_test_equal_variances():
    # Means 12 and 14, variance 2.5 each, n 5: se = sqrt(0.5 + 0.5) = 1, t = -2, df = 1 / (2 x 0.25 / 4) = 8;
    # p = 2 x P(T8 > 2) = 0.0805162380.
    result = welch_test([10.0, 11.0, 12.0, 13.0, 14.0], [12.0, 13.0, 14.0, 15.0, 16.0])
    assert result["t"] == pytest.approx(-2.0, rel=1e-12)
    assert result["df"] == pytest.approx(8.0, rel=1e-12)
    assert result["p_value"] == pytest.approx(0.08051623795726, rel=1e-10)
    assert result["within_noise"] is True


def test_welch_test_unequal_variances_and_sizes():
    # a: mean 2.5, var 5/3, n 4; b: mean 7, var 14, n 6. se^2 = 5/12 + 14/6 = 2.75, t = -4.5 / sqrt(2.75);
    # df = 2.75^2 / ((5/12)^2 / 3 + (14/6)^2 / 5) = 6.5946710 (Welch-Satterthwaite, not n1 + n2 - 2 = 8).
    result = welch_test([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0, 10.0, 12.0])
    assert result["t"] == pytest.approx(-4.5 / 2.75**0.5, rel=1e-12)
    assert result["df"] == pytest.approx(2.75**2 / ((5 / 12) ** 2 / 3 + (14 / 6) ** 2 / 5), rel=1e-12)
    assert result["df"] == pytest.approx(6.59467097295, rel=1e-10)
    assert result["p_value"] == pytest.approx(0.03182444378, rel=1e-9)
    assert result["within_noise"] is False
    assert welch_test([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0, 10.0, 12.0], alpha=0.01)["within_noise"] is True


def test_welch_test_undefined_cases():
    undefined = {"t": None, "df": None, "p_value": None, "within_noise": None}
    assert welch_test([1.0], [2.0, 3.0]) == undefined  # one run has no spread estimate
    assert welch_test([5.0, 5.0, 5.0], [5.0, 5.0]) == undefined  # no spread on either side
    assert welch_test([5.0, 5.0, 5.0], [6.0, 7.0])["p_value"] is not None  # one side with spread suffices


def test_a_latency_without_a_known_percentile_is_absent_not_a_crash():
    from levelfield.ground.metrics import percentile_latency_ns

    values = {"result_90.00_percentile_latency_ns": 1234}
    assert percentile_latency_ns(values, 0.90) == 1234
    assert percentile_latency_ns(values, None) is None and percentile_latency_ns(values, 0.99) is None
