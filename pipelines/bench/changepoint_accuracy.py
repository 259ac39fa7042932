"""`tracereplay bench changepoints`: how often the nightly change-point search finds a step, how
close it dates it and how often its 95 % date interval holds the true night, at given run-to-run
noise levels; with the least-squares split that knows there is exactly one step as the baseline
measured in the same run (what the data allow), and clean series for the false alarms.

Series: `nights` values of lognormal noise sigma, every value from night `step_at` on multiplied
by 1 + step (docs/regressions.md has the tables this prints)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from pipelines.analysis.changes.break_date import split_costs
from pipelines.analysis.changes.changepoints import detect_change_points


@dataclass(frozen=True)
class NoiseRates:
    """The counts at one noise level (rates: count / series, count / clean, covered / dated)."""

    noise: float
    series: int
    within: int  # exactly one confirmed point, within `window` nights of the step
    missed: int  # no confirmed point at all
    oracle_within: int  # the least-squares split of the whole series, within `window` nights
    dated: int  # exactly one confirmed point
    covered: int  # of those, the 95 % date interval holds the step's night
    median_width: float  # runs from the interval's earliest to its latest night
    clean: int
    clean_raised: int  # clean series with any point, pending included


def least_squares_split(z: np.ndarray, min_segment: int = 5) -> int:
    """The single split of z with the least squared error (break_date.split_costs), at least
    min_segment values on each side: the first index after it."""
    k = np.arange(min_segment, len(z) - min_segment + 1)
    return int(k[np.argmin(split_costs(z)[k - 1])])


def noise_rates(
    noise: float,
    *,
    step: float = 0.03,
    nights: int = 60,
    step_at: int = 40,
    series: int = 300,
    clean: int = 300,
    window: int = 2,
    seed: int = 0,
) -> NoiseRates:
    """Draw `series` stepped and `clean` unchanged series at this noise and count."""
    if not 1 < step_at <= nights:
        raise ValueError(f"the step's night must lie in 2..{nights}, got {step_at}")
    rng = np.random.default_rng(seed)
    at = step_at - 1  # index of the first night after the step
    within = missed = oracle = dated = covered = 0
    widths = []
    for _ in range(series):
        z = rng.normal(0.0, noise, nights)
        z[at:] += np.log1p(step)
        oracle += abs(least_squares_split(z) - at) <= window
        points = [p for p in detect_change_points(np.exp(z)) if p.status == "confirmed"]
        missed += not points
        if len(points) == 1:
            (p,) = points
            dated += 1
            within += abs(p.index - at) <= window
            covered += p.index_lo <= at <= p.index_hi
            widths.append(p.index_hi - p.index_lo)
    raised = sum(
        bool(detect_change_points(np.exp(rng.normal(0.0, noise, nights)))) for _ in range(clean)
    )
    width = float(np.median(widths)) if widths else float("nan")
    return NoiseRates(noise, series, within, missed, oracle, dated, covered, width, clean, raised)


def _rate(hits: int, n: int) -> str:
    if n == 0:
        return "-"
    lo, hi = proportion_confint(hits, n, alpha=0.05, method="wilson")
    return f"{hits / n:6.1%} [{lo:.1%}, {hi:.1%}]"


def format_rates(rows: list[NoiseRates], step: float, step_at: int, window: int) -> str:
    """The table `tracereplay bench changepoints` prints (fits 120 columns)."""
    head = (
        f"+{step:.1%} step at night {step_at}, lognormal run noise; 95 % Wilson intervals; "
        f"'within' = one confirmed point within ±{window} nights"
    )
    lines = [
        head,
        f"{'noise':>6} {'n':>5}  {'within (detector)':<24} {'within (LS oracle)':<24} "
        f"{'missed':>6}  {'date interval holds':<24} {'width':>5}  clean raised",
    ]
    for r in rows:
        lines.append(
            f"{r.noise:>6.1%} {r.series:>5}  {_rate(r.within, r.series):<24} "
            f"{_rate(r.oracle_within, r.series):<24} {r.missed:>6}  "
            f"{_rate(r.covered, r.dated):<24} {r.median_width:>5.0f}  "
            f"{r.clean_raised}/{r.clean}"
        )
    lines.append(
        "LS oracle (baseline): the least-squares split, told there is exactly one step; width: "
        "median runs in the date interval"
    )
    return "\n".join(lines)


def run_changepoint_bench(
    noises: tuple[float, ...],
    *,
    step: float,
    nights: int,
    step_at: int,
    series: int,
    clean: int,
    window: int,
    seed: int,
    as_json: bool,
) -> list[NoiseRates]:
    """Every noise level with the same seed; printed as a table or JSON."""
    rows = []
    for noise in noises:
        rows.append(
            noise_rates(
                noise,
                step=step,
                nights=nights,
                step_at=step_at,
                series=series,
                clean=clean,
                window=window,
                seed=seed,
            )
        )
        if not as_json:
            print(f"  noise {noise:.1%} done", file=sys.stderr, flush=True)
    if as_json:
        json.dump([asdict(r) for r in rows], sys.stdout, indent=1)
        print()
    else:
        print(format_rates(rows, step, step_at, window))
    return rows
