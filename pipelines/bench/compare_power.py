"""`tracereplay bench compare-power`: how often `compare`'s statistics (compare_samples, the same
function `tracereplay compare` calls) call a true +5 % change `regressed`, and how often they
flag no difference, with `runs` runs a side, by lognormal run-to-run noise; from the runs alone
and with a variance prior from a `history`-night history of the same noise (the moderated t;
the history is drawn per trial, its variance estimated as `compare` does, not given). Also
counts a printed effect outside its own interval (there must be none). Rates with 95 % Wilson
intervals (docs/regressions.md has the table this prints)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from pipelines.analysis.comparison.compare import VariancePrior, compare_samples
from pipelines.analysis.comparison.history_prior import variance_from_history

NOISES = (0.01, 0.015, 0.02, 0.03)
SHIFTS = (0.05, 0.0)


@dataclass(frozen=True)
class PowerCell:
    """The verdicts of `draws` trials of one cell."""

    noise: float
    shift: float
    prior: bool
    draws: int
    regressed: int
    improved: int
    outside: int  # a printed effect outside its own interval


def power_cell(
    noise: float, shift: float, prior: bool, *, draws: int, runs: int, history: int, seed: int
) -> PowerCell:
    rng = np.random.default_rng([seed, int(noise * 1e4), int(shift * 1e4)])
    regressed = improved = outside = 0
    for _ in range(draws):
        base = 1e9 * np.exp(rng.normal(0.0, noise, runs))
        cand = 1e9 * (1 + shift) * np.exp(rng.normal(0.0, noise, runs))
        nights = 1e9 * np.exp(rng.normal(0.0, noise, history))  # drawn in every cell alike
        priors = None
        if prior:
            found = variance_from_history(nights)
            if found is not None:
                priors = {"ttft_ns": VariancePrior(found[0], found[1], history, "drawn")}
        (row,) = compare_samples({"ttft_ns": (base, cand)}, {"ttft_ns": True}, priors=priors)
        regressed += row.verdict == "regressed"
        improved += row.verdict == "improved"
        outside += not row.effect_lo <= row.effect <= row.effect_hi
    return PowerCell(noise, shift, prior, draws, regressed, improved, outside)


def _rate(hits: int, n: int) -> str:
    lo, hi = proportion_confint(hits, n, alpha=0.05, method="wilson")
    return f"{hits / n:6.1%} [{lo:.1%}, {hi:.1%}]"


def format_cells(cells: list[PowerCell], runs: int, history: int) -> str:
    lines = [
        f"{runs} runs a side, lognormal run noise, one-sided test toward worse at 0.05; "
        "95 % Wilson intervals",
        f"{'noise':>6} {'true':>6} {'variance':<18} {'draws':>6}  {'regressed':<23} "
        f"{'improved':<23} {'outside own CI':>14}",
    ]
    for c in cells:
        source = f"{history}-night prior" if c.prior else "runs alone"
        lines.append(
            f"{c.noise:>6.1%} {c.shift:>+6.0%} {source:<18} {c.draws:>6}  "
            f"{_rate(c.regressed, c.draws):<23} {_rate(c.improved, c.draws):<23} {c.outside:>14}"
        )
    return "\n".join(lines)


def run_compare_power_bench(
    *, draws: int, runs: int, history: int, seed: int, as_json: bool
) -> list[PowerCell]:
    cells = [
        power_cell(noise, shift, prior, draws=draws, runs=runs, history=history, seed=seed)
        for noise in NOISES
        for shift in SHIFTS
        for prior in (False, True)
    ]
    if as_json:
        json.dump([asdict(c) for c in cells], sys.stdout, indent=1)
        print()
    else:
        print(format_cells(cells, runs, history))
    return cells
