"""`tracereplay bench changepoints`: how often the nightly change-point search finds a step, how
close it dates it and how often its 95 % date set holds the true night, at given run-to-run noise
levels; how often clean and one-spike series raise a point; and how often a clean series
re-scanned every night confirms one. Baselines measured on the same draws (what the data allow):
the least-squares split and the posterior 5-night window, each told there is exactly one step,
and per draw where the detector's date parts from the posterior oracle's.

Series: `nights` values of lognormal noise sigma, every value from night `step_at` on multiplied
by 1 + step; spiked series: one night at a random place x1.10. Every rate is printed with its
95 % Wilson interval (docs/regressions.md has the tables this prints)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from pipelines.analysis.changes.break_date import (
    break_date_interval,
    posterior_window_date,
    split_costs,
)
from pipelines.analysis.changes.changepoints import detect_change_points, gate_passes
from pipelines.analysis.changes.rescans import nightly_confirmations, withdrawn_points

SPIKE = 0.10


@dataclass(frozen=True)
class NoiseRates:
    """The counts at one noise level (rates: count / series, count / clean, covered / dated)."""

    noise: float
    series: int
    within: int  # exactly one confirmed point, within `window` nights of the step
    missed: int  # no confirmed point at all
    oracle_within: int  # the least-squares split of the whole series, within `window` nights
    posterior_within: int  # the posterior window of the whole series, within `window` nights
    dated: int  # exactly one confirmed point
    covered: int  # of those, the 95 % date set holds the step's night
    lr_covered: int  # of those, the likelihood-ratio set (the set printed before 2026-12-04) does
    median_width: float  # runs from the set's earliest to its latest night
    gate_posterior_within: int  # the gate passes on the whole series and the posterior is within
    # per draw, of those the posterior oracle dates within `window` nights, the detector:
    oracle_ok_missed: int  # confirmed no point
    oracle_ok_off: int  # confirmed exactly one point, more than `window` nights off
    oracle_ok_several: int  # confirmed more than one point
    date_differs: int  # exactly one confirmed point, on another night than the oracle's
    clean: int
    clean_raised: int  # clean series with any point, pending included
    clean_confirmed: int  # clean series with a confirmed point
    spiked: int
    spiked_raised: int  # one-spike series with any point, pending included


@dataclass(frozen=True)
class RescanRates:
    """Clean series scanned every night from the shortest history that can hold a point."""

    noise: float
    nights: int
    series: int
    confirmed: int  # series where some nightly scan confirmed a point
    withdrawn: int  # series where a confirmed point was withdrawn by the last scan


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
    series: int = 1000,
    clean: int = 1000,
    spiked: int = 1000,
    window: int = 2,
    seed: int = 0,
) -> NoiseRates:
    """Draw `series` stepped, `clean` unchanged and `spiked` one-spike series at this noise."""
    if not 1 < step_at <= nights:
        raise ValueError(f"the step's night must lie in 2..{nights}, got {step_at}")
    rng = np.random.default_rng(seed)
    at = step_at - 1  # index of the first night after the step
    within = missed = oracle = posterior = dated = covered = 0
    gate_posterior = ok_missed = ok_off = ok_several = differs = lr_covered = 0
    widths = []
    for _ in range(series):
        z = rng.normal(0.0, noise, nights)
        z[at:] += np.log1p(step)
        oracle += abs(least_squares_split(z) - at) <= window
        date = posterior_window_date(z, 5, window)
        ok = abs(date - at) <= window
        posterior += ok
        gate_posterior += ok and gate_passes(np.exp(z))
        points = [p for p in detect_change_points(np.exp(z)) if p.status == "confirmed"]
        missed += not points
        ok_missed += ok and not points
        ok_several += ok and len(points) > 1
        if len(points) == 1:
            (p,) = points
            dated += 1
            within += abs(p.index - at) <= window
            ok_off += ok and abs(p.index - at) > window
            differs += p.index != date
            covered += p.index_lo <= at <= p.index_hi
            lo, hi = break_date_interval(z[: p.index], z[p.index :])
            lr_covered += lo <= at <= hi
            widths.append(p.index_hi - p.index_lo)
    clean_raised = clean_confirmed = 0
    for _ in range(clean):
        found = detect_change_points(np.exp(rng.normal(0.0, noise, nights)))
        clean_raised += bool(found)
        clean_confirmed += any(p.status == "confirmed" for p in found)
    spiked_raised = 0
    for _ in range(spiked):
        z = rng.normal(0.0, noise, nights)
        z[rng.integers(1, nights - 1)] += np.log1p(SPIKE)
        spiked_raised += bool(detect_change_points(np.exp(z)))
    width = float(np.median(widths)) if widths else float("nan")
    return NoiseRates(
        noise,
        series,
        within,
        missed,
        oracle,
        posterior,
        dated,
        covered,
        lr_covered,
        width,
        gate_posterior,
        ok_missed,
        ok_off,
        ok_several,
        differs,
        clean,
        clean_raised,
        clean_confirmed,
        spiked,
        spiked_raised,
    )


def rescan_rates(noise: float, *, nights: int = 90, series: int = 1000, seed: int = 0):
    """Clean series, each scanned as nightly use would: every history length up to `nights`."""
    rng = np.random.default_rng(seed + 1_000_003)
    confirmed = withdrawn = 0
    for _ in range(series):
        y = np.exp(rng.normal(0.0, noise, nights))
        seen = nightly_confirmations(y)
        confirmed += bool(seen)
        withdrawn += bool(seen and withdrawn_points(seen, detect_change_points(y)))
    return RescanRates(noise, nights, series, confirmed, withdrawn)


def _rate(hits: int, n: int) -> str:
    if n == 0:
        return "-"
    lo, hi = proportion_confint(hits, n, alpha=0.05, method="wilson")
    return f"{hits / n:6.1%} [{100 * lo:.1f}, {100 * hi:.1f}]"


def format_rates(
    rows: list[NoiseRates], rescans: RescanRates | None, step: float, step_at: int, window: int
) -> str:
    """The tables `tracereplay bench changepoints` prints (fit 120 columns)."""
    lines = [
        f"+{step:.1%} step at night {step_at}, lognormal run noise; 95 % Wilson intervals (%);",
        f"'within' = exactly one confirmed point within ±{window} nights",
        f"{'noise':>6} {'n':>5}  {'within (detector)':<21} {'LS oracle':<21} "
        f"{'posterior oracle':<21} {'missed':>6}  {'95 % date set holds':<21} {'width':>5}",
    ]
    for r in rows:
        lines.append(
            f"{r.noise:>6.1%} {r.series:>5}  {_rate(r.within, r.series):<21} "
            f"{_rate(r.oracle_within, r.series):<21} {_rate(r.posterior_within, r.series):<21} "
            f"{r.missed:>6}  {_rate(r.covered, r.dated):<21} {r.median_width:>5.0f}"
        )
    lines += [
        "oracles (same draws, told there is exactly one step): LS = least-squares split; "
        "posterior = centre of the",
        f"  ±{window}-night window with the most posterior probability; width: median runs in "
        "the 95 % date set",
        "",
        "per draw, where the posterior oracle is within: the detector missed (no confirmed "
        "point), dated off, or confirmed",
        "  several points; 'gate + posterior': the search's gate passes on the whole series "
        "and the oracle is within;",
        "  LR: the likelihood-ratio date set (Hansen 2000) at the same point, the set printed "
        "before 2026-12-04",
        f"{'noise':>6} {'oracle within':>13} {'missed':>7} {'off':>5} {'several':>7} "
        f"{'gate + posterior':<21} {'date != oracle':<15} {'LR date set holds':<21}",
    ]
    for r in rows:
        lines.append(
            f"{r.noise:>6.1%} {r.posterior_within:>13} {r.oracle_ok_missed:>7} "
            f"{r.oracle_ok_off:>5} {r.oracle_ok_several:>7} "
            f"{_rate(r.gate_posterior_within, r.series):<21} {r.date_differs:>5} of {r.dated:<6} "
            f"{_rate(r.lr_covered, r.dated)}"
        )
    lines += [
        "",
        f"{'noise':>6} {'clean':>5}  {'raised any point':<21} {'confirmed a point':<21} "
        f"{'spiked':>6}  one +10 % night raised a point",
    ]
    for r in rows:
        lines.append(
            f"{r.noise:>6.1%} {r.clean:>5}  {_rate(r.clean_raised, r.clean):<21} "
            f"{_rate(r.clean_confirmed, r.clean):<21} {r.spiked:>6}  "
            f"{_rate(r.spiked_raised, r.spiked)}"
        )
    if rescans is not None:
        r = rescans
        lines += [
            "",
            f"{r.series} clean series ({r.noise:.1%} noise) re-scanned every night from night 10 "
            f"to {r.nights}:",
            f"  confirmed a point in {_rate(r.confirmed, r.series).strip()}; "
            f"withdrawn again by night {r.nights} in {_rate(r.withdrawn, r.series).strip()}",
        ]
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
    spiked: int | None = None,
    rescan_nights: int = 90,
    rescan_series: int = 1000,
    rescan_noise: float = 0.02,
) -> tuple[list[NoiseRates], RescanRates | None]:
    """Every noise level with the same seed, then the nightly re-scan cell (rescan_series 0:
    none); printed as tables or JSON."""
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
                spiked=clean if spiked is None else spiked,
                window=window,
                seed=seed,
            )
        )
        if not as_json:
            print(f"  noise {noise:.1%} done", file=sys.stderr, flush=True)
    rescans = None
    if rescan_series > 0:
        rescans = rescan_rates(rescan_noise, nights=rescan_nights, series=rescan_series, seed=seed)
    if as_json:
        payload = {
            "levels": [asdict(r) for r in rows],
            "rescans": asdict(rescans) if rescans else None,
        }
        json.dump(payload, sys.stdout, indent=1)
        print()
    else:
        print(format_rates(rows, rescans, step, step_at, window))
    return rows, rescans
