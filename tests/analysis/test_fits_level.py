"""`fit_curve(level=...)` sets the level of every interval, the bootstrap ones included."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.analysis.tau.fits import _interval, fit_curve

LEVELS = (0.5, 0.95, 0.99)


def test_percentile_interval_takes_the_central_share_of_a_known_sample() -> None:
    values = np.arange(1001.0)  # 0 .. 1000: the q-quantile is 1000 q
    assert _interval(values, 0.5) == pytest.approx((250.0, 750.0))
    assert _interval(values, 0.95) == pytest.approx((25.0, 975.0))
    assert _interval(values, 0.99) == pytest.approx((5.0, 995.0))
    assert np.isnan(_interval(np.array([np.nan]), 0.9)).all()


@pytest.mark.parametrize("n_runs", [1, 6], ids=["one_run", "six_runs"])
def test_balance_and_vpp_intervals_widen_with_the_level(n_runs: int) -> None:
    rng = np.random.default_rng(7)
    k = np.tile(np.arange(8.0), n_runs)
    runs = np.repeat(np.arange(n_runs), 8)
    # convex: an affine curve's balance interval is [0, 0] from one run (nothing to balance)
    tau = (40.0 + 5.0 * k + 1.5 * k**2) * (1 + 0.05 * rng.standard_normal(k.size))
    fits = {lv: fit_curve(k, tau, runs, level=lv, n_boot=2000, seed=3) for lv in LEVELS}
    unit = "shape" if n_runs == 1 else "runs"
    assert fits[0.5].balance_method == f"parametric({unit}) quadratic"
    pairs = [("balance_lo", "balance_hi"), ("slope_lo", "slope_hi")]
    if n_runs > 1:  # one run has no VPP-bubble interval (no pure error: bubble_pred)
        pairs.append(("vpp_bubble_lo", "vpp_bubble_hi"))
    else:
        assert all(np.isnan(f.vpp_bubble_lo) for f in fits.values())
    for lo_name, hi_name in pairs:
        widths = [getattr(fits[lv], hi_name) - getattr(fits[lv], lo_name) for lv in LEVELS]
        assert 0 < widths[0] < widths[1] < widths[2], (lo_name, widths)
        # nested: the 50 % interval lies inside the 99 % one
        assert getattr(fits[0.99], lo_name) <= getattr(fits[0.5], lo_name)
        assert getattr(fits[0.5], hi_name) <= getattr(fits[0.99], hi_name)
    assert {f.level for f in fits.values()} == set(LEVELS)
