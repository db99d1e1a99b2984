"""Statistics over repeated runs, shared by the trainer summary, the checker and the leaderboard.

    olympic_mean([30.1, 29.5, 31.0, 30.4, 45.0], drop=1)   # mean without the best and the worst
    summarize([30.1, 29.5, 31.0, 30.4, 45.0], drop=1)      # the dict every summary shows

MLPerf scores time-to-train as the olympic mean: drop the fastest and the
slowest run(s), average the rest. levelfield adds the spread (sample standard
deviation) and a 95% confidence interval of the mean (Student's t), so a
difference inside the noise is visible as such.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CONFIDENCE = 0.95


def olympic_mean(values: Sequence[float], drop: int) -> float:
    """Mean after dropping the `drop` smallest and `drop` largest values."""
    if len(values) <= 2 * drop:
        raise ValueError(f"olympic mean of {len(values)} values dropping {drop} from each end leaves none")
    kept = sorted(values)[drop: len(values) - drop]
    return math.fsum(kept) / len(kept)


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return math.fsum(values) / len(values)


def stdev(values: Sequence[float]) -> float:
    """Sample standard deviation (n - 1); 0 for a single value."""
    if len(values) < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (len(values) - 1))


def confidence_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Two-sided Student-t interval of the mean; None with fewer than two values."""
    if len(values) < 2:
        return None
    from scipy import stats  # scipy comes with mlperf-logging, a core dependency

    half = stats.t.ppf(0.5 + confidence / 2, df=len(values) - 1) * stdev(values) / math.sqrt(len(values))
    m = mean(values)
    return (float(m - half), float(m + half))


def summarize(values: Sequence[float], drop: int) -> dict:
    """Olympic mean (when enough values), mean, standard deviation and 95% CI of the mean."""
    ci = confidence_interval(values)
    return {
        "n": len(values),
        "olympic_mean": olympic_mean(values, drop) if len(values) > 2 * drop else None,
        "mean": mean(values) if values else None,
        "stdev": stdev(values) if values else None,
        "ci95_low": ci[0] if ci else None,
        "ci95_high": ci[1] if ci else None,
    }
