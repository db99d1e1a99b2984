"""Statistics pinned on small known inputs."""

import pytest

from levelfield.stats import confidence_interval, olympic_mean, stdev, summarize


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


def test_summarize_with_one_value_has_no_olympic_mean():
    s = summarize([12.5], drop=1)
    assert s == {"n": 1, "olympic_mean": None, "mean": 12.5, "stdev": 0.0, "ci95_low": None, "ci95_high": None}
