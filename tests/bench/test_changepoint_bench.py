"""`tracereplay bench changepoints`: the counts it prints come from the detector's real output."""

import json

import numpy as np

from pipelines.bench.changepoint_accuracy import least_squares_split, noise_rates, rescan_rates
from pipelines.cli import main


def test_the_least_squares_split_finds_a_clean_step():
    z = np.r_[np.zeros(39), np.ones(21)]
    assert least_squares_split(z) == 39


def test_a_step_of_six_sigma_is_found_and_dated_every_time():
    rates = noise_rates(0.005, series=20, clean=20, spiked=20, seed=1)
    assert rates.within == rates.oracle_within == rates.posterior_within == rates.dated == 20
    assert rates.covered == 20 and rates.missed == 0 and rates.clean_raised == 0
    assert rates.spiked_raised == 0  # a +10 % night at 0.5 % noise is screened out
    assert rates.median_width <= 2
    # per draw against the posterior oracle: nothing missed, nothing dated elsewhere
    assert rates.gate_posterior_within == rates.lr_covered == 20
    assert rates.oracle_ok_missed == rates.oracle_ok_off == rates.date_differs == 0


def test_a_step_of_three_quarters_of_a_sigma_is_often_missed():
    rates = noise_rates(0.04, series=30, clean=10, spiked=10, seed=2)
    assert rates.missed >= 10
    assert rates.within < rates.series
    assert rates.oracle_within < rates.series
    # the oracle dates some of the series the detector misses, and some its gate fails
    assert rates.oracle_ok_missed >= 1
    assert rates.gate_posterior_within < rates.posterior_within


def test_the_command_prints_json_per_noise_level(capsys):
    argv = ["bench", "changepoints", "--noise", "1,2", "--series", "10", "--clean", "10"]
    assert main([*argv, "--rescan-series", "3", "--rescan-nights", "30", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["levels"]
    assert [r["noise"] for r in rows] == [0.01, 0.02]
    assert all(r["series"] == 10 and r["clean"] == 10 and r["spiked"] == 10 for r in rows)
    assert out["rescans"]["series"] == 3 and out["rescans"]["nights"] == 30
    assert main(["bench", "changepoints", "--noise", "0"]) == 2


def test_a_stepped_series_rescanned_nightly_is_confirmed_and_not_withdrawn():
    # rescan_rates draws clean series; a clear step shows what a confirmation looks like
    from pipelines.analysis.changes.changepoints import detect_change_points
    from pipelines.analysis.changes.rescans import nightly_confirmations, withdrawn_points

    rng = np.random.default_rng(3)
    y = np.exp(rng.normal(0, 0.005, 40))
    y[25:] *= 1.05
    seen = nightly_confirmations(y)
    assert seen and {c.point.index for c in seen} == {25}
    assert min(c.nights for c in seen) >= 30  # 5 runs after it, never earlier
    assert withdrawn_points(seen, detect_change_points(y)) == []
    assert rescan_rates(0.005, nights=20, series=5).confirmed == 0
