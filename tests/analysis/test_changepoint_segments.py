"""A tau_k fit respects confirmed change points: the runs of a configuration whose nightly
history holds a confirmed change are fitted one curve per segment, not pooled across it."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.analysis.changes.segments import SEGMENT, segment_labels
from pipelines.analysis.tau.fit_store import FitOptions, fit_and_store
from pipelines.cli.fit import format_table
from pipelines.store import open_store
from tests.analysis.synthetic_runs import write_run


def test_segment_labels_split_at_each_change_and_merge_near_ones() -> None:
    history = [(f"r{i}", f"2026-01-{i + 1:02d}T00:00:00") for i in range(12)]
    assert set(segment_labels(history, []).values()) == {""}
    labels = segment_labels(history, ["r8", "r9", "r4"])  # r8 and r9: one change
    assert labels["r0"] == labels["r3"] == "1/3 from 2026-01-01"
    assert labels["r4"] == labels["r7"] == "2/3 from 2026-01-05"
    assert labels["r8"] == labels["r11"] == "3/3 from 2026-01-09"


def test_fit_pools_runs_on_one_side_of_a_confirmed_change_only(tmp_path) -> None:
    con = open_store(tmp_path / "w.duckdb").open()
    rng = np.random.default_rng(2026)
    for night in range(30):
        # the attention cost (the slope) 20 % higher from night 20 on: 20 normal and 10 slow runs
        b_ns = 20e6 * (1.2 if night >= 20 else 1.0)
        write_run(con, f"b-n{night:02d}", night, model="b", b_ns=b_ns, rng=rng, noise=0.01)
        write_run(con, f"a-n{night:02d}", night, model="a", rng=rng, noise=0.01)
    fits = fit_and_store(con, FitOptions(n_boot=0)).fits
    con.close()
    stage0 = fits.filter(pl.col("vstage") == 0)
    a = stage0.filter(pl.col("model") == "a")
    assert a[SEGMENT].to_list() == [""]  # no change: one curve, as before
    b = stage0.filter(pl.col("model") == "b").sort(SEGMENT)
    assert b.height == 2, b[SEGMENT].to_list()
    assert b["n_runs"].sum() == 30
    before, after = b.row(0, named=True), b.row(1, named=True)
    assert before[SEGMENT].startswith("1/2") and after[SEGMENT].startswith("2/2")
    # each side's slope interval holds its own slope (pooled, the slope was neither)
    assert before["slope_lo"] <= 20e6 <= before["slope_hi"]
    assert after["slope_lo"] <= 24e6 <= after["slope_hi"]
    # `tracereplay fit` names the side: "b [1/2]" (wide: with the date of its first run)
    compact, wide = format_table(b), format_table(b, wide=True)
    assert "b [1/2]" in compact and "b [2/2]" in compact
    assert f"b [{before[SEGMENT]}]" in wide and "robust slope CI" in wide
    assert max(len(line) for line in compact.splitlines()) <= 120
