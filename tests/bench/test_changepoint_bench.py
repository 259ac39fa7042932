"""`tracereplay bench changepoints`: the counts it prints come from the detector's real output."""

import json

import numpy as np

from pipelines.bench.changepoint_accuracy import least_squares_split, noise_rates
from pipelines.cli import main


def test_the_least_squares_split_finds_a_clean_step():
    z = np.r_[np.zeros(39), np.ones(21)]
    assert least_squares_split(z) == 39


def test_a_step_of_six_sigma_is_found_and_dated_every_time():
    rates = noise_rates(0.005, series=20, clean=20, seed=1)
    assert rates.within == rates.oracle_within == rates.dated == 20
    assert rates.covered == 20 and rates.missed == 0 and rates.clean_raised == 0
    assert rates.median_width <= 2


def test_a_step_of_three_quarters_of_a_sigma_is_often_missed():
    rates = noise_rates(0.04, series=30, clean=10, seed=2)
    assert rates.missed >= 10
    assert rates.within < rates.series
    assert rates.oracle_within < rates.series


def test_the_command_prints_json_per_noise_level(capsys):
    argv = ["bench", "changepoints", "--noise", "1,2", "--series", "10", "--clean", "10", "--json"]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["noise"] for r in rows] == [0.01, 0.02]
    assert all(r["series"] == 10 and r["clean"] == 10 for r in rows)
    assert main(["bench", "changepoints", "--noise", "0"]) == 2
