"""The disturbance table counts each stage curve once per kind and finds the outlier chunk."""

from __future__ import annotations

from pipelines.bench.tau_cells import CELLS, cell_rates


def test_one_cell_counts_every_stage_curve_and_keeps_a_x2_chunk_out_of_the_shape() -> None:
    cell = next(c for c in CELLS if c.name == "one x2 chunk")
    row = cell_rates(cell, n=8, runs=1, curves=2, seed=3)
    assert {row[key]["n"] for key in ("dense", "covered", "glm", "collapse")} == {4}
    assert row["dense"]["hits"] == 4, row["verdicts"]  # linear (or drift), never a shape
    assert row["glm"]["hits"] == 4, row["verdicts"]
