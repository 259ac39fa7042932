"""The stage-curve disturbance table draws what pipelines.sim.disturbance draws, and counts it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipelines.bench.tau_cells import CELLS, Cell, collapsed
from pipelines.bench.tau_stage_cells import draw_runs, run_stage_cells, stage_cell_rates
from pipelines.cli import ExitCode, main
from pipelines.sim.disturbance import Disturbance

TAU = 1e8 * (1.0 + 0.5 * np.arange(8.0))


def test_a_throttle_multiplies_each_run_from_its_own_onset_on() -> None:
    cell = Cell("x1.05 step, no noise", 0.0, Disturbance(throttle_factor=1.05))
    k, tau, run = draw_runs(TAU, 12, cell, np.random.default_rng(0), outlier_k=2)
    assert list(np.unique(run)) == list(range(12)) and list(k[:8]) == list(range(8))
    onsets = []
    for r in range(12):
        ratio = tau[run == r] / np.rint(TAU)
        onset = int(np.argmax(ratio > 1.01))
        assert 1 <= onset <= 7
        assert np.allclose(ratio[onset:], 1.05, atol=1e-6) and np.all(ratio[:onset] == 1.0)
        onsets.append(onset)
    # drawn per run: a throttle at one chunk in every run would be a level step of the curve
    assert len(set(onsets)) > 1


def test_the_one_run_table_counts_both_intervals(capsys) -> None:
    argv = ["bench", "tau-accuracy", "--one-run", "2", "--only", "AR(1) 0.7", "--json"]
    assert main(argv) == ExitCode.OK
    (row,) = json.loads(capsys.readouterr().out)["cells"]
    assert row["model"]["n"] == row["robust"]["n"] == 4 and row["glm"] is None
    assert row["robust_half_over_white_median"] > row["model_half_over_white_median"] > 0


def test_chunks_sets_the_one_run_length_and_a_bad_count_is_refused(capsys) -> None:
    argv = ["bench", "tau-accuracy", "--one-run", "1", "--only", "iid 3%", "--json"]
    assert main([*argv, "--chunks", "9,10"]) == ExitCode.OK
    rows = json.loads(capsys.readouterr().out)["cells"]
    assert [row["n_chunks"] for row in rows] == [9, 10]
    assert all(row["model"]["n"] == 2 and row["glm"]["n"] == 2 for row in rows)
    for bad in ("4", "x", ""):
        assert main([*argv, "--chunks", bad]) == ExitCode.BAD_INPUT
        assert "--chunks takes chunk counts" in capsys.readouterr().err
    assert main(["bench", "tau-accuracy", "--chunks", "9"]) == ExitCode.BAD_INPUT
    assert "--chunks goes with --one-run" in capsys.readouterr().err


def test_an_outlier_chunk_is_the_same_index_in_every_run() -> None:
    cell = Cell("x2 chunk, no noise", 0.0, Disturbance(outlier_factor=2.0))
    _, tau, _ = draw_runs(TAU, 2, cell, np.random.default_rng(0), outlier_k=5)
    ratio = tau / np.tile(TAU, 2)
    assert list(np.flatnonzero(ratio != 1.0)) == [5, 13] and ratio[5] == 2.0


def test_the_collapse_halves_the_slope_from_the_middle() -> None:
    slopes = np.diff(collapsed(TAU))
    assert np.allclose(slopes[:4], 0.5e8) and np.allclose(slopes[4:], 0.25e8)


def test_one_cell_counts_two_stage_curves_per_fit() -> None:
    cell = next(c for c in CELLS if c.name == "iid 3%")
    row = stage_cell_rates(cell, n=8, runs=3, fits=3, seed=0)
    assert {row[key]["n"] for key in ("dense", "covered", "glm", "collapse")} == {6}
    assert row["glm"]["hits"] == 6, row["verdicts"]  # GLM-5.2's bend at 3 runs is always seen
    assert sum(row["verdicts"]["dense"].values()) == 6


def test_an_unknown_cell_is_refused_with_the_names_that_exist(capsys) -> None:
    with pytest.raises(ValueError, match="iid 3%"):
        run_stage_cells(1, only=("iid 4%",))
    argv = ["bench", "tau-accuracy", "--stage-cells", "1", "--only", "iid 4%"]
    assert main(argv) == ExitCode.BAD_INPUT
    assert "cells are" in capsys.readouterr().err
    assert main(["bench", "tau-accuracy", "--only", "iid 3%"]) == ExitCode.BAD_INPUT


@pytest.mark.slow  # all 9 stage cells (CI runs it: .ci/run); 3 cells stay in the default run
def test_json_goes_to_stdout_alone_and_progress_to_stderr(capsys) -> None:
    rows = run_stage_cells(1, only=("iid 3%",), as_json=True)
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert len(rows) == len(doc["cells"]) == 9 and doc["fits_per_cell"] == 1
    assert "cell 9/9 (iid 3%, N=21, G=5)" in err


def test_repeats_selects_rows_and_an_unknown_count_is_refused(capsys) -> None:
    rows = run_stage_cells(1, only=("iid 3%",), as_json=True, repeats=(3,))
    assert [(row["n_chunks"], row["runs"]) for row in rows] == [(8, 3), (16, 3), (21, 3)]
    assert "cell 3/3 (iid 3%, N=21, G=3)" in capsys.readouterr().err
    # the same draws as the whole table's G = 3 rows
    assert rows[0] == stage_cell_rates(CELLS[0], n=8, runs=3, fits=1, seed=0)
    argv = ["bench", "tau-accuracy", "--stage-cells", "1", "--repeats", "2"]
    assert main(argv) == ExitCode.BAD_INPUT
    assert "it has 1, 3, 5" in capsys.readouterr().err
    assert main(["bench", "tau-accuracy", "--repeats", "3"]) == ExitCode.BAD_INPUT


def test_with_onset_starts_the_throttle_at_that_chunk() -> None:
    step = Disturbance(throttle_factor=1.05)
    for n in (8, 10, 21):
        assert [step.with_onset(c, n).throttle_start(n) for c in range(n + 1)] == list(range(n + 1))
    with pytest.raises(ValueError):
        step.with_onset(9, 8)
