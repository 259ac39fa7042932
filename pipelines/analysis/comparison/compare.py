"""Compare two sets of runs metric by metric: one estimand per metric for the point, the interval
and the test (docs/regressions.md §compare).

Per metric, with positive values (every duration and rate here), the estimand is the ratio of
geometric means, exp(mean log candidate - mean log baseline) - 1: the printed point, its 95 %
interval (Welch's t interval on log values) and the test (Welch's t on log values) are all about
it, so the point always lies inside its interval, and run-to-run noise, which is multiplicative,
is symmetric there. With a variance prior (`VariancePrior`: the run-to-run variance of log values
in the configuration's nightly history, at least MIN_PRIOR_NIGHTS nights) the test and the
interval are the moderated t of Smyth (2004, "Linear models and empirical Bayes methods for
assessing differential expression in microarray experiments", SAGMB 3(1)): the pooled variance of
the two sides shrunk to the prior, s~^2 = (d0 s0^2 + d s^2) / (d0 + d), with d0 + d degrees of
freedom. A metric with a value <= 0 (a fitted intercept, an exposed time of 0) has no log: there
the estimand is the difference of arithmetic means relative to the baseline mean, with Welch's t
on the raw values for the interval and the test.

The test is directional: `compare` asks whether the candidate is worse, so its p is one-sided
toward worse (the metric's direction), corrected across the metrics compared
(Benjamini-Hochberg by default for a run set, RUN_SET_CORRECTION; Holm by default here). Verdicts:

* inconclusive when a side has fewer than MIN_RUNS runs (one run never makes a change);
* unchanged when the 90 % interval lies within +-min_effect (two one-sided tests at alpha, TOST),
  or when both sides hold one identical value;
* regressed when the corrected one-sided p toward worse is below alpha and the point effect is
  worse by at least min_effect (the stated practical magnitude);
* improved when the corrected one-sided p toward better is below alpha / 2 (the two-sided test:
  no direction was asked for) and the point effect is better by at least min_effect;
* inconclusive otherwise, with the reason.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

MIN_RUNS = 3
MIN_PRIOR_NIGHTS = 20
DEFAULT_MIN_EFFECT = 0.01
DEFAULT_ALPHA = 0.05
CORRECTIONS = {"holm": "Holm", "fdr_bh": "Benjamini-Hochberg"}
RUN_SET_CORRECTION = "fdr_bh"
"""The correction `tracereplay compare` applies across its metrics by default. A run set's
metrics move together (TTFT, makespan and throughput are one timeline; compute and bubble scale
with it), so Holm, which pays for every metric as if it were a separate look, loses a change
that every metric shows (docs/regressions.md). Under no change at all BH's chance of any flag is
at most alpha, as Holm's. `--correction holm` keeps family-wise control when metrics differ."""


@dataclass(frozen=True)
class VariancePrior:
    """The run-to-run variance of a metric's log values in the configuration's nightly history
    (within the segments between its change points) and its degrees of freedom."""

    variance: float
    df: int
    nights: int
    source: str  # the configuration, as a label

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class MetricComparison:
    """One metric of a comparison; effect and interval are relative (0.05 = +5 %)."""

    metric: str
    n_baseline: int
    n_candidate: int
    mean_baseline: float
    mean_candidate: float
    effect: float  # the estimand named by `estimand`
    effect_lo: float
    effect_hi: float
    interval: str  # welch_log, moderated_log, welch, exact, none
    test: str  # welch_t_log, moderated_t_log, welch_t, none
    test_reason: str
    p_value: float  # one-sided, toward worse
    p_adjusted: float
    correction: str
    verdict: str  # improved, regressed, unchanged, inconclusive
    reason: str
    estimand: str = "geometric_mean_ratio"  # or arithmetic_mean_difference, none
    p_better_adjusted: float = math.nan  # one-sided toward better, corrected (vs alpha / 2)
    prior_nights: int = 0  # nights of history in the variance prior (0: none)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class _Contrast:
    """A difference of two means (of log or raw values), its standard error and df."""

    diff: float
    se: float
    df: float
    scale: float  # relative effect = transform(diff) (log: expm1; raw: diff / scale)
    on_logs: bool

    def relative(self, d: float) -> float:
        return math.expm1(d) if self.on_logs else d / self.scale

    def interval(self, level: float) -> tuple[float, float]:
        if self.se == 0:
            return self.relative(self.diff), self.relative(self.diff)
        q = float(stats.t.ppf(0.5 + level / 2, self.df))
        return self.relative(self.diff - q * self.se), self.relative(self.diff + q * self.se)

    def p_greater(self) -> float:
        """One-sided p of 'the candidate's mean is larger'."""
        if self.se == 0:
            return 0.0 if self.diff > 0 else 1.0
        return float(stats.t.sf(self.diff / self.se, self.df))

    def p_less(self) -> float:
        if self.se == 0:
            return 0.0 if self.diff < 0 else 1.0
        return float(stats.t.cdf(self.diff / self.se, self.df))


def _welch(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(standard error, Welch-Satterthwaite df) of mean(y) - mean(x); a side without spread
    leaves the other side's one-sample terms (n - 1 df); both: se 0."""
    a, b = np.var(x, ddof=1) / len(x), np.var(y, ddof=1) / len(y)
    if a + b == 0:
        return 0.0, math.inf
    df = (a + b) ** 2 / (a * a / (len(x) - 1) + b * b / (len(y) - 1))
    return math.sqrt(a + b), df


def welch_difference_interval(
    baseline: np.ndarray, candidate: np.ndarray, level: float = 0.95
) -> tuple[float, float]:
    """Welch's interval of mean(candidate) - mean(baseline) (scipy.stats.ttest_ind), 2 or more
    values a side (the schedule table's absolute differences). A side without spread: the other
    side's one-sample t interval, shifted by the fixed value (scipy's two-sample form warns of
    precision loss there); both: the exact difference."""
    flat_b, flat_c = np.ptp(baseline) == 0, np.ptp(candidate) == 0
    if flat_b and flat_c:
        delta = float(candidate.mean() - baseline.mean())
        return delta, delta
    if flat_b:
        ci = stats.ttest_1samp(candidate, baseline[0]).confidence_interval(level)
        return float(ci.low - baseline.mean()), float(ci.high - baseline.mean())
    if flat_c:
        ci = stats.ttest_1samp(baseline, candidate[0]).confidence_interval(level)
        return float(candidate.mean() - ci.high), float(candidate.mean() - ci.low)
    ci = stats.ttest_ind(candidate, baseline, equal_var=False).confidence_interval(level)
    return float(ci.low), float(ci.high)


def contrast(
    baseline: np.ndarray, candidate: np.ndarray, prior: VariancePrior | None = None
) -> tuple[_Contrast, str, str]:
    """The contrast of the two sides (2 or more values each) and (interval, test) names: log
    values when all are positive (moderated by `prior` when given), raw values otherwise."""
    on_logs = bool(np.all(baseline > 0) and np.all(candidate > 0))
    x, y = (np.log(baseline), np.log(candidate)) if on_logs else (baseline, candidate)
    diff = float(np.mean(y) - np.mean(x))
    scale = abs(float(np.mean(baseline))) or 1.0
    if on_logs and prior is not None:
        d = len(x) + len(y) - 2
        ss = float(np.sum((x - x.mean()) ** 2) + np.sum((y - y.mean()) ** 2))
        s2 = (prior.df * prior.variance + ss) / (prior.df + d)
        se = math.sqrt(s2 * (1 / len(x) + 1 / len(y)))
        return _Contrast(diff, se, prior.df + d, scale, True), "moderated_log", "moderated_t_log"
    se, df = _welch(x, y)
    if on_logs:
        return _Contrast(diff, se, df, scale, True), "welch_log", "welch_t_log"
    return _Contrast(diff, se, df, scale, False), "welch", "welch_t"


def effect_interval(
    baseline: np.ndarray, candidate: np.ndarray, *, level: float = 0.95, seed: int = 0
) -> tuple[float, float, str]:
    """The interval of the relative effect `point_effect` reports (Welch's t on log values for
    positive values, on raw values otherwise); NaN with fewer than 2 values a side. `seed` is
    unused (kept for callers; no resampling)."""
    del seed
    baseline, candidate = np.asarray(baseline, float), np.asarray(candidate, float)
    if min(len(baseline), len(candidate)) < 2:
        return math.nan, math.nan, "none"
    c, interval, _ = contrast(baseline, candidate)
    lo, hi = c.interval(level)
    return lo, hi, interval


def point_effect(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """The relative effect of one estimand: the ratio of geometric means - 1 for positive values,
    the difference of arithmetic means relative to the baseline's otherwise."""
    baseline, candidate = np.asarray(baseline, float), np.asarray(candidate, float)
    if not (len(baseline) and len(candidate)):
        return math.nan
    if np.all(baseline > 0) and np.all(candidate > 0):
        return math.expm1(float(np.mean(np.log(candidate)) - np.mean(np.log(baseline))))
    scale = abs(float(np.mean(baseline)))
    return float(np.mean(candidate) - np.mean(baseline)) / scale if scale else math.nan


def _verdict(
    n_b: int,
    n_c: int,
    effect: float,
    d_lo: float,
    d_hi: float,
    p_worse: float,
    p_better: float,
    lower_is_better: bool,
    min_effect: float,
    alpha: float,
) -> tuple[str, str]:
    """d_lo, d_hi: the 1 - 2 alpha interval (its bounds are one-sided alpha tests: TOST)."""
    if min(n_b, n_c) < MIN_RUNS:
        return "inconclusive", f"n < {MIN_RUNS} on a side ({n_b} vs {n_c})"
    if math.isfinite(d_lo) and -min_effect <= d_lo and d_hi <= min_effect:
        return "unchanged", (
            f"equivalent within +-{min_effect:.1%} (two one-sided tests at {alpha:g}: "
            f"{1 - 2 * alpha:.0%} interval [{d_lo:+.1%}, {d_hi:+.1%}])"
        )
    worse = effect * (1 if lower_is_better else -1)  # > 0: the candidate is worse
    if p_worse < alpha and worse >= min_effect:
        return "regressed", (
            f"one-sided p toward worse {p_worse:.2g} < {alpha:g} (corrected), effect "
            f"{effect:+.1%} beyond +-{min_effect:.1%}"
        )
    if p_better < alpha / 2 and -worse >= min_effect:
        return "improved", (
            f"one-sided p toward better {p_better:.2g} < {alpha / 2:g} (corrected; two-sided "
            f"{alpha:g}), effect {effect:+.1%} beyond +-{min_effect:.1%}"
        )
    if p_worse < alpha or p_better < alpha / 2:
        return "inconclusive", (
            f"significant, but the effect {effect:+.1%} is within +-{min_effect:.1%}"
        )
    p = min(p_worse, 2 * p_better)
    return "inconclusive", f"not significant (p_adj {p:.2g} >= {alpha:g})"


def holm_adjusted(p: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, as statsmodels' `multipletests(method="holm")` gives
    them (tests/analysis/test_compare.py checks equality on seeded draws). statsmodels' Holm
    branch ends with `gc.collect()` (statsmodels 0.14, multitest.py): a full collection of the
    caller's heap, 0.06 s in a bare process and 0.3-0.4 s inside a test run or a Dagster worker,
    most of a comparison's time (20 comparisons took 18 s); the adjustment itself is this."""
    values = np.asarray(p, dtype=float)
    order = np.argsort(values)
    stepped = np.maximum.accumulate(values[order] * np.arange(len(values), 0, -1))
    out = np.empty_like(values)
    out[order] = np.minimum(stepped, 1.0)
    return out.tolist()


def _adjust(p: list[float], correction: str) -> list[float]:
    tested = [i for i, v in enumerate(p) if math.isfinite(v)]
    out = [math.nan] * len(p)
    if len(tested) == 1:  # one test: its own p
        out[tested[0]] = p[tested[0]]
    elif tested:
        values = [p[i] for i in tested]
        if correction == "holm":
            adj = holm_adjusted(values)
        else:
            _, adj, _, _ = multipletests(values, method=correction)
        for i, value in zip(tested, adj, strict=True):
            out[i] = float(value)
    return out


def compare_samples(
    samples: dict[str, tuple[np.ndarray, np.ndarray]],
    lower_is_better: dict[str, bool],
    *,
    min_effect: float = DEFAULT_MIN_EFFECT,
    alpha: float = DEFAULT_ALPHA,
    correction: str = "holm",
    seed: int = 0,
    priors: dict[str, VariancePrior] | None = None,
) -> list[MetricComparison]:
    """Compare baseline and candidate samples per metric: {metric: (baseline, candidate)};
    `priors`: {metric: VariancePrior} from the configuration's nightly history (moderated t)."""
    del seed  # nothing is resampled
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r}: expected one of {', '.join(CORRECTIONS)}")
    priors = priors or {}
    rows, p_worse, p_better = [], [], []
    for metric, (base, cand) in samples.items():
        base = np.asarray(base, dtype=float)
        cand = np.asarray(cand, dtype=float)
        base, cand = base[np.isfinite(base)], cand[np.isfinite(cand)]
        n_b, n_c = len(base), len(cand)
        row = {
            "metric": metric,
            "n_baseline": n_b,
            "n_candidate": n_c,
            "mean_baseline": float(base.mean()) if n_b else math.nan,
            "mean_candidate": float(cand.mean()) if n_c else math.nan,
            "effect": point_effect(base, cand),
            "effect_lo": math.nan,
            "effect_hi": math.nan,
            "interval": "none",
            "test": "none",
            "test_reason": "n < 2 on a side",
            "estimand": "none",
            "decision": (math.nan, math.nan),
            "prior_nights": 0,
        }
        pw = pb = math.nan
        if n_b and n_c:
            positive = bool(np.all(base > 0) and np.all(cand > 0))
            row["estimand"] = "geometric_mean_ratio" if positive else "arithmetic_mean_difference"
        same = n_b >= 2 and n_c >= 2 and np.ptp(np.concatenate([base, cand])) == 0
        if same:  # every run of both sides holds one value (0 included): no difference at all
            row.update(effect=0.0, effect_lo=0.0, effect_hi=0.0, interval="exact")
            row.update(test_reason="both sides hold one identical value", decision=(0.0, 0.0))
            pw = pb = 1.0
        elif min(n_b, n_c) >= 2 and math.isfinite(row["effect"]):
            prior = priors.get(metric)
            c, interval, test = contrast(base, cand, prior)
            lo, hi = c.interval(0.95)
            toward_worse = c.p_greater if lower_is_better[metric] else c.p_less
            toward_better = c.p_less if lower_is_better[metric] else c.p_greater
            pw, pb = toward_worse(), toward_better()
            row.update(effect_lo=lo, effect_hi=hi, interval=interval, test=test)
            row.update(test_reason=_TEST_REASON[test], decision=c.interval(1 - 2 * alpha))
            if test == "moderated_t_log" and prior is not None:
                row["prior_nights"] = prior.nights
        rows.append(row)
        p_worse.append(pw)
        p_better.append(pb)
    adj_worse, adj_better = _adjust(p_worse, correction), _adjust(p_better, correction)
    out = []
    for row, pw, aw, ab in zip(rows, p_worse, adj_worse, adj_better, strict=True):
        d_lo, d_hi = row.pop("decision")
        verdict, why = _verdict(
            row["n_baseline"],
            row["n_candidate"],
            row["effect"],
            d_lo,
            d_hi,
            aw if math.isfinite(aw) else 1.0,
            ab if math.isfinite(ab) else 1.0,
            lower_is_better[row["metric"]],
            min_effect,
            alpha,
        )
        out.append(
            MetricComparison(
                **{k: row[k] for k in _FIELDS},
                p_value=pw,
                p_adjusted=aw,
                correction=CORRECTIONS[correction],
                verdict=verdict,
                reason=why,
                estimand=row["estimand"],
                p_better_adjusted=ab,
                prior_nights=row["prior_nights"],
            )
        )
    return out


_FIELDS = (
    "metric",
    "n_baseline",
    "n_candidate",
    "mean_baseline",
    "mean_candidate",
    "effect",
    "effect_lo",
    "effect_hi",
    "interval",
    "test",
    "test_reason",
)
_TEST_REASON = {
    "welch_t_log": "Welch's t on log values (multiplicative noise), one-sided toward worse;"
    " point and interval: the ratio of geometric means",
    "moderated_t_log": "moderated t on log values (Smyth 2004): the variance shrunk to the"
    " configuration's nightly history, one-sided toward worse; point and interval: the ratio"
    " of geometric means",
    "welch_t": "a value <= 0: Welch's t on raw values, one-sided toward worse; point and"
    " interval: the difference of arithmetic means relative to the baseline's",
}
