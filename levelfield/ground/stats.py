"""Statistics over repeated runs, shared by the trainer summary, the checker and the leaderboard.

    olympic_mean([30.1, 29.5, 31.0, 30.4, 45.0], drop=1)   # mean without the best and the worst
    olympic_score([30.1, None, 31.0, 30.4, 45.0], drop=1)  # MLPerf's score: a failed run (None) is the slowest
    time_to_train([30.1, 29.5, None, 30.4, 45.0], drop=1)  # a result's time-to-train figures (summary, leaderboard)
    spread([4120.0, 4310.5, 3987.2])                         # n, mean, stdev, 95% CI (inference repeats)
    welch_test([30.1, 29.5, 31.0], [33.0, 32.1, 34.2])     # {"t", "df", "p_value", "within_noise"}

MLPerf scores time-to-train as the olympic mean: drop the fastest and the
slowest run(s), average the rest. levelfield adds the spread (sample standard
deviation), a 95% confidence interval of the mean (Student's t) and Welch's
unequal-variance t-test between two sets of runs, so a difference inside the
noise is visible as such.

`time_to_train` is the one definition of a training result's figures; the
trainer's summary.json, the checker (`training_score`) and the leaderboard
all take it from here. Its figures, and why they differ:

- `olympic_mean`: MLPerf's score over every run. A failed run (one that did
  not reach the target, given as None) counts as the slowest, then the
  `olympic_drop` fastest and slowest runs are dropped. None with 2 x drop
  runs or fewer, or when a failed run would survive the drop.
- `single_run_s`: a result of exactly one run (the demo and smoke profiles)
  has no olympic mean; its one time is shown as what it is, a single run,
  never under the olympic mean's name. None when there are more runs or the
  one run failed.
- `mean`, `stdev`, `ci95_low`, `ci95_high`, `n`: over the successful runs
  only (`n` of them). A failed run has no duration to average or to spread,
  so these cannot include it; the olympic mean already ranks it last. The CI
  is therefore the interval of the successful runs' mean, not of the
  olympic mean, and is named after `mean`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

CONFIDENCE = 0.95
# Two-sided significance level of the Welch test: p >= ALPHA means the two sets of runs do not
# differ beyond their run-to-run noise (the leaderboard marks such pairs "within noise").
ALPHA = 0.05


def olympic_mean(values: Sequence[float], drop: int) -> float:
    """Mean after dropping the `drop` smallest and `drop` largest values."""
    if len(values) <= 2 * drop:
        raise ValueError(f"olympic mean of {len(values)} values dropping {drop} from each end leaves none")
    kept = sorted(values)[drop : len(values) - drop]
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


def spread(values: Sequence[float]) -> dict:
    """n, mean, sample standard deviation and the 95% CI of the mean (None where undefined)."""
    ci = confidence_interval(values)
    return {
        "n": len(values),
        "mean": mean(values) if values else None,
        "stdev": stdev(values) if values else None,
        "ci95_low": ci[0] if ci else None,
        "ci95_high": ci[1] if ci else None,
    }


def olympic_score(times: Sequence[float | None], drop: int) -> float | None:
    """MLPerf's time-to-train score: the olympic mean with every failed run (None) counted as the slowest.

    A run that never reached the target has no time; MLPerf ranks it behind every successful run, so it
    is the first to be dropped. None when fewer than 2 x drop + 1 runs, or when a failed run would
    survive the drop (the score is then undefined, as in MLPerf, not infinite).
    """
    if len(times) <= 2 * drop:
        return None
    score = olympic_mean([math.inf if t is None else t for t in times], drop)
    return None if math.isinf(score) else score


def time_to_train(times_s: Sequence[float | None], drop: int) -> dict:
    """A training result's figures from every run's time to target in s (None = the run failed).

    {"olympic_mean", "single_run_s", "mean", "stdev", "ci95_low", "ci95_high", "n", "olympic_drop"};
    the module docstring says what each figure covers and why they differ.
    """
    ok = [t for t in times_s if t is not None]
    return {
        "olympic_mean": olympic_score(times_s, drop),
        "single_run_s": ok[0] if len(times_s) == 1 and ok else None,
        **{key: value for key, value in spread(ok).items() if key != "n"},
        "n": len(ok),
        "olympic_drop": drop,
    }


def shown_time_to_train(figures: dict) -> tuple[float | None, str | None]:
    """The one time a table shows for a result and what it is: ("olympic mean" | "single run" | None).

    The olympic mean where it exists, else a lone run's own time; (None, None) when neither exists.
    """
    if figures["olympic_mean"] is not None:
        return figures["olympic_mean"], "olympic mean"
    if figures["single_run_s"] is not None:
        return figures["single_run_s"], "single run"
    return None, None


def welch_test(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA, alternative: str = "two-sided") -> dict:
    """Welch's t-test of mean(a) == mean(b) without assuming equal variances.

    `alternative` is scipy's: "two-sided" (the default), or "less" / "greater" for the one-sided
    test that mean(a) is below / above mean(b).

    Returns {"t", "df", "p_value", "within_noise"} with within_noise = p_value >= alpha. Every value is
    None when the test is undefined: fewer than two values on a side, or no spread on either side.
    """
    undefined = {"t": None, "df": None, "p_value": None, "within_noise": None}
    if len(a) < 2 or len(b) < 2 or (stdev(a) == 0 and stdev(b) == 0):
        return undefined
    from scipy import stats

    with warnings.catch_warnings():
        # scipy warns of "catastrophic cancellation" when one side is constant (e.g. equal run times to the
        # ms); the statistic is still exact then, and the undefined cases are handled above and below.
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_ind(list(a), list(b), equal_var=False, alternative=alternative)
    t, p, df = float(result.statistic), float(result.pvalue), float(result.df)
    if not (math.isfinite(t) and math.isfinite(p)):
        return undefined
    return {"t": t, "df": df, "p_value": p, "within_noise": p >= alpha}
