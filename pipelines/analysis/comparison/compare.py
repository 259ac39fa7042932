"""Compare two sets of runs metric by metric, with the statistics benchstat would accept.

Per metric: n on each side, the relative effect (the ratio of geometric means - 1 below
RANK_TEST_MIN_N runs a side, of arithmetic means from there: the estimand of the interval, so the
point lies inside it; `point_effect`) with a 95 %
interval (`effect_interval`: scipy.stats.bootstrap BCa from RANK_TEST_MIN_N runs a side, Welch's
t interval on log values below it, where a bootstrap of 3-5 values undercovers), a two-sided
test, a multiple-testing correction across the metrics compared (Holm by default here;
Benjamini-Hochberg by default for a run-set comparison, RUN_SET_CORRECTION), and a verdict
(docs/regressions.md §compare), whose magnitude conditions are one-sided tests at alpha, read
off the 1 - 2 alpha (90 %) interval as in two one-sided tests (TOST):

* inconclusive when a side has fewer than MIN_RUNS runs (one run never makes a change);
* unchanged when the 90 % interval lies within +-min_effect (equivalence, TOST at alpha);
* improved / regressed when the corrected p-value is below alpha and the effect lies beyond
  +-min_effect at one-sided alpha (a practical magnitude, as criterion.rs's noise threshold):
  with 5 runs a side at 1.5 % noise a true +5 % is regressed in 97 % of 400 trials and no
  difference flags any of six metrics in 1 % (docs/regressions.md);
* inconclusive otherwise, with the reason.

The test: Welch's t on log values when a side has fewer than RANK_TEST_MIN_N runs, because the
exact Mann-Whitney U cannot get small enough there (5 vs 5: the smallest two-sided p is 2/252 =
0.0079, so after Holm over six metrics it could never flag anything) and run-to-run noise is
multiplicative; Mann-Whitney U (as benchstat) from RANK_TEST_MIN_N runs a side, where it has the
power and is robust to the odd slow run.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

MIN_RUNS = 3
RANK_TEST_MIN_N = 8
DEFAULT_MIN_EFFECT = 0.01
DEFAULT_ALPHA = 0.05
CORRECTIONS = {"holm": "Holm", "fdr_bh": "Benjamini-Hochberg"}
RUN_SET_CORRECTION = "fdr_bh"
"""The correction `tracereplay compare` applies across its metrics by default. A run set's
metrics move together (TTFT, makespan and throughput are one timeline; compute and bubble scale
with it), so Holm, which pays for every metric as if it were a separate look, lost a true +5 %
change that every metric shows: 5 runs a side, 1.5 % lognormal run noise, the six default
metrics, 200 trials: regressed 177 with Holm against 199 with Benjamini-Hochberg (199 for TTFT
compared alone); with no difference any metric was flagged in 5 of 400 trials with BH (2 % noise:
10 of 400; Holm 2). Under no change at all BH's chance of any flag is at most alpha, as Holm's
(docs/regressions.md). `--correction holm` keeps family-wise control when metrics differ."""


@dataclass(frozen=True)
class MetricComparison:
    """One metric of a comparison; effect and interval are relative (0.05 = +5 %)."""

    metric: str
    n_baseline: int
    n_candidate: int
    mean_baseline: float
    mean_candidate: float
    effect: float
    effect_lo: float
    effect_hi: float
    interval: str  # welch_log, bca, percentile, none
    test: str  # welch_t_log, mann_whitney_u, none
    test_reason: str
    p_value: float
    p_adjusted: float
    correction: str
    verdict: str  # improved, regressed, unchanged, inconclusive
    reason: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _relative_effect(baseline: np.ndarray, candidate: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(candidate, axis=axis) / np.mean(baseline, axis=axis) - 1.0


def point_effect(baseline: np.ndarray, candidate: np.ndarray, interval: str) -> float:
    """The relative effect the interval and the test are about, so that the printed point lies
    inside its own interval: the ratio of geometric means for the Welch interval on log values,
    the ratio of arithmetic means for the bootstrap of that ratio (and when there is none)."""
    flat = np.ptp(baseline) == 0 and np.ptp(candidate) == 0  # the interval is this exact value
    if interval == "welch_log" and not flat:
        return math.expm1(float(np.mean(np.log(candidate)) - np.mean(np.log(baseline))))
    return float(np.mean(candidate) / np.mean(baseline) - 1)


def bootstrap_effect(
    baseline: np.ndarray, candidate: np.ndarray, *, level: float = 0.95, seed: int = 0
) -> tuple[float, float, str]:
    """Interval of mean(candidate)/mean(baseline) - 1 by scipy.stats.bootstrap (independent
    resampling of each side): BCa, else percentile when BCa's jackknife is degenerate."""
    rng = np.random.default_rng(seed)
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = stats.bootstrap(
                (baseline, candidate),
                _relative_effect,
                n_resamples=2000,
                confidence_level=level,
                method=method,
                vectorized=True,
                rng=rng,
            )
        lo, hi = result.confidence_interval
        if math.isfinite(lo) and math.isfinite(hi):
            return float(lo), float(hi), method.lower()
    return math.nan, math.nan, "none"


def welch_difference_interval(
    baseline: np.ndarray, candidate: np.ndarray, level: float = 0.95
) -> tuple[float, float]:
    """Welch's interval of mean(candidate) - mean(baseline) (scipy.stats.ttest_ind), 2 or more
    values a side. A side without spread: the other side's one-sample t interval, shifted by the
    fixed value (scipy's two-sample form warns of precision loss there); both: the exact
    difference."""
    flat_b, flat_c = np.ptp(baseline) == 0, np.ptp(candidate) == 0
    if flat_b and flat_c:
        delta = float(candidate.mean() - baseline.mean())
        return delta, delta
    # the fixed side enters as its mean, as in the difference the interval is reported around
    if flat_b:
        ci = stats.ttest_1samp(candidate, baseline[0]).confidence_interval(level)
        return float(ci.low - baseline.mean()), float(ci.high - baseline.mean())
    if flat_c:
        ci = stats.ttest_1samp(baseline, candidate[0]).confidence_interval(level)
        return float(candidate.mean() - ci.high), float(candidate.mean() - ci.low)
    ci = stats.ttest_ind(candidate, baseline, equal_var=False).confidence_interval(level)
    return float(ci.low), float(ci.high)


def welch_log_interval(
    baseline: np.ndarray, candidate: np.ndarray, *, level: float = 0.95
) -> tuple[float, float, str]:
    """Welch's t interval of mean(log candidate) - mean(log baseline), as a relative effect
    (exp - 1): the interval of the Welch-log test itself, for multiplicative noise. Needs
    positive values and 2 or more a side."""
    if min(len(baseline), len(candidate)) < 2 or np.any(baseline <= 0) or np.any(candidate <= 0):
        return math.nan, math.nan, "none"
    if np.ptp(baseline) == 0 and np.ptp(candidate) == 0:  # both fixed: the exact effect itself
        effect = float(np.mean(candidate) / np.mean(baseline) - 1)
        return effect, effect, "welch_log"
    lo, hi = welch_difference_interval(np.log(baseline), np.log(candidate), level)
    return math.expm1(lo), math.expm1(hi), "welch_log"


def effect_interval(
    baseline: np.ndarray, candidate: np.ndarray, *, level: float = 0.95, seed: int = 0
) -> tuple[float, float, str]:
    """The interval of the relative effect: BCa bootstrap from RANK_TEST_MIN_N runs a side,
    Welch's t interval on log values below it, where the bootstrap of 3-5 values undercovers
    (measured, 2 % lognormal noise, +5 %, 300-400 trials: BCa held the effect in 82 % at 3 a
    side, 88 % at 5, 90-96 % at 8-30; the Welch-log interval in 98 / 96 / 93-96 %;
    docs/regressions.md)."""
    if min(len(baseline), len(candidate)) >= RANK_TEST_MIN_N:
        return bootstrap_effect(baseline, candidate, level=level, seed=seed)
    lo, hi, method = welch_log_interval(baseline, candidate, level=level)
    if method == "none":  # values that are not all positive: the bootstrap still applies
        return bootstrap_effect(baseline, candidate, level=level, seed=seed)
    return lo, hi, method


def choose_test(n_baseline: int, n_candidate: int) -> tuple[str, str]:
    """(test, reason) for these sample sizes."""
    if min(n_baseline, n_candidate) >= RANK_TEST_MIN_N:
        return "mann_whitney_u", f">= {RANK_TEST_MIN_N} runs a side: rank test, robust to outliers"
    return (
        "welch_t_log",
        f"< {RANK_TEST_MIN_N} runs a side, where exact Mann-Whitney U cannot reach small p;"
        " Welch's t on log values (multiplicative noise)",
    )


def test_difference(baseline: np.ndarray, candidate: np.ndarray, test: str) -> float:
    """Two-sided p-value of `test` for a difference between the two samples. A side without
    spread (a metric the schedule fixes, e.g. a simulated run's exposed communication): with
    both, no test is needed (1.0 when they hold the same value, else 0.0); with one, Welch's t
    is the one-sample t of the other side against that value (its variance term and degrees of
    freedom are the other side's), computed so, since scipy's two-sample form warns of precision
    loss on a constant sample."""
    baseline, candidate = np.asarray(baseline, float), np.asarray(candidate, float)
    flat_b = len(baseline) > 0 and np.ptp(baseline) == 0
    flat_c = len(candidate) > 0 and np.ptp(candidate) == 0
    if flat_b and flat_c:
        return 1.0 if baseline[0] == candidate[0] else 0.0
    if test == "mann_whitney_u":
        return float(stats.mannwhitneyu(candidate, baseline, alternative="two-sided").pvalue)
    if not (np.any(baseline <= 0) or np.any(candidate <= 0)):
        baseline, candidate = np.log(baseline), np.log(candidate)
    if flat_b:
        p = stats.ttest_1samp(candidate, baseline[0]).pvalue
    elif flat_c:
        p = stats.ttest_1samp(baseline, candidate[0]).pvalue
    else:
        p = stats.ttest_ind(candidate, baseline, equal_var=False).pvalue
    return float(p) if math.isfinite(p) else 1.0


test_difference.__test__ = False  # not a pytest test


def _verdict(
    n_b: int,
    n_c: int,
    effect: float,
    lo: float,
    hi: float,
    p_adj: float,
    lower_is_better: bool,
    min_effect: float,
    alpha: float,
) -> tuple[str, str]:
    """lo, hi: the decision interval (1 - 2 alpha, two-sided): its bounds are the one-sided
    alpha tests of the minimum effect, as in two one-sided tests (TOST)."""
    if min(n_b, n_c) < MIN_RUNS:
        return "inconclusive", f"n < {MIN_RUNS} on a side ({n_b} vs {n_c})"
    if math.isfinite(lo) and -min_effect <= lo and hi <= min_effect:
        return "unchanged", (
            f"equivalent within +-{min_effect:.1%} (two one-sided tests at {alpha:g}: "
            f"{1 - 2 * alpha:.0%} interval [{lo:+.1%}, {hi:+.1%}])"
        )
    if not p_adj < alpha:
        return "inconclusive", f"not significant (p_adj {p_adj:.2g} >= {alpha:g})"
    if not (lo > min_effect or hi < -min_effect):
        return "inconclusive", (
            f"significant, but not beyond +-{min_effect:.1%} at one-sided {alpha:g} "
            f"({1 - 2 * alpha:.0%} interval [{lo:+.1%}, {hi:+.1%}])"
        )
    worse = (effect > 0) == lower_is_better
    bound = lo if lo > min_effect else hi
    return ("regressed" if worse else "improved"), (
        f"p_adj {p_adj:.2g} < {alpha:g}, and beyond +-{min_effect:.1%} at one-sided {alpha:g} "
        f"(bound {bound:+.1%})"
    )


def compare_samples(
    samples: dict[str, tuple[np.ndarray, np.ndarray]],
    lower_is_better: dict[str, bool],
    *,
    min_effect: float = DEFAULT_MIN_EFFECT,
    alpha: float = DEFAULT_ALPHA,
    correction: str = "holm",
    seed: int = 0,
) -> list[MetricComparison]:
    """Compare baseline and candidate samples per metric: {metric: (baseline, candidate)}."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r}: expected one of {', '.join(CORRECTIONS)}")
    partial = []
    decision = []  # the 1 - 2 alpha interval per metric: the verdict's one-sided tests
    for i, (metric, (base, cand)) in enumerate(samples.items()):
        base = np.asarray(base, dtype=float)
        cand = np.asarray(cand, dtype=float)
        base, cand = base[np.isfinite(base)], cand[np.isfinite(cand)]
        n_b, n_c = len(base), len(cand)
        mean_b = float(base.mean()) if n_b else math.nan
        mean_c = float(cand.mean()) if n_c else math.nan
        effect = mean_c / mean_b - 1 if n_b and n_c and mean_b != 0 else math.nan
        lo = hi = p = d_lo = d_hi = math.nan
        interval, test, reason = "none", "none", "n < 2 on a side"
        same = n_b >= 2 and n_c >= 2 and np.ptp(np.concatenate([base, cand])) == 0
        if same:  # every run of both sides holds one value (0 included): no difference at all
            effect = lo = hi = d_lo = d_hi = 0.0
            interval, test, reason, p = "exact", "none", "both sides hold one identical value", 1.0
        elif min(n_b, n_c) >= 2 and mean_b != 0:
            test, reason = choose_test(n_b, n_c)
            p = test_difference(base, cand, test)
            if min(n_b, n_c) >= MIN_RUNS:
                lo, hi, interval = effect_interval(base, cand, seed=seed + i)
                d_lo, d_hi, _ = effect_interval(base, cand, level=1 - 2 * alpha, seed=seed + i)
                effect = point_effect(base, cand, interval)
        partial.append(
            [metric, n_b, n_c, mean_b, mean_c, effect, lo, hi, interval, test, reason, p]
        )
        decision.append((d_lo, d_hi))
    tested = [i for i, row in enumerate(partial) if math.isfinite(row[11])]
    adjusted = [math.nan] * len(partial)
    if len(tested) == 1:  # one test: its own p (statsmodels' Holm runs gc.collect(), 0.3 s)
        adjusted[tested[0]] = partial[tested[0]][11]
    elif tested:
        _, p_adj, _, _ = multipletests([partial[i][11] for i in tested], method=correction)
        for i, value in zip(tested, p_adj, strict=True):
            adjusted[i] = float(value)
    out = []
    for row, p_adj, (d_lo, d_hi) in zip(partial, adjusted, decision, strict=True):
        metric, n_b, n_c, _, _, effect = row[:6]
        verdict, why = _verdict(
            n_b, n_c, effect, d_lo, d_hi, p_adj, lower_is_better[metric], min_effect, alpha
        )
        out.append(MetricComparison(*row, p_adj, CORRECTIONS[correction], verdict, why))
    return out
