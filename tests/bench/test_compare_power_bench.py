"""`tracereplay bench compare-power`: the counts come from compare_samples' real verdicts."""

import json

import numpy as np

from pipelines.analysis.comparison.history_prior import variance_from_history
from pipelines.bench.compare_power import power_cell
from pipelines.cli import main


def test_a_large_change_is_always_regressed_and_inside_its_interval():
    cell = power_cell(0.005, 0.05, False, draws=50, runs=5, history=20, seed=1)
    assert cell.regressed == 50 and cell.improved == 0 and cell.outside == 0
    quiet = power_cell(0.02, 0.0, True, draws=200, runs=5, history=20, seed=2)
    assert quiet.regressed <= 25 and quiet.outside == 0  # about 5 %


def test_the_history_variance_is_cut_at_its_change_points():
    rng = np.random.default_rng(4)
    z = rng.normal(0, 0.01, 40)
    stepped = np.exp(np.r_[z[:20], z[20:] + 0.2])  # +22 % from night 20
    variance, df = variance_from_history(stepped)
    assert 0.5 * 0.01**2 < variance < 2 * 0.01**2 and df == 38  # two segments
    assert variance_from_history(np.exp(z[:19])) is None  # fewer than 20 nights


def test_the_command_prints_json_cells(capsys):
    assert main(["bench", "compare-power", "--draws", "5", "--json"]) == 0
    cells = json.loads(capsys.readouterr().out)
    assert len(cells) == 16 and all(c["draws"] == 5 for c in cells)
    assert {c["prior"] for c in cells} == {False, True}
    assert main(["bench", "compare-power", "--runs", "2"]) == 2
