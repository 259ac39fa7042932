"""Tensor-parallel ranks profiled as their own rank folders (TP8 x PP2 = 16) are one measurement
of each chunk, not tp repeats of it: int_chunk_tau makes one row per chunk x virtual stage."""

from __future__ import annotations

import polars as pl

from pipelines.analysis.tau.curves import fit_curves
from pipelines.analysis.tau.tau_points import chunk_tau_of
from pipelines.ingest.frames import SCHEMAS, conform
from pipelines.replay.tables import chunks_frame
from pipelines.sim.run import simulate
from pipelines.sim.trace_shape import expand_tp_ranks

K = 1024


def _runs_row(run_id: str) -> pl.DataFrame:
    row = dict.fromkeys(SCHEMAS["runs"])
    row.update(run_id=run_id, source="test", content_hash=run_id, model="deepseek-v3.1")
    row.update(schedule="cpp", tp=8, pp=2)
    row.update(chunk_size=16 * K, seq_len=128 * K, vp=1, hardware="ascend-910c")
    return conform("runs", pl.DataFrame([row], schema=SCHEMAS["runs"]))


def _points(tp_ranks: bool) -> pl.DataFrame:
    parts = []
    for seed in range(3):
        result = simulate(128 * K, "cpp", chunk_size=16 * K, noise=0.03, seed=seed)
        result = expand_tp_ranks(result, 8) if tp_ranks else result
        run_id = f"run{seed}"
        parts.append(chunk_tau_of(chunks_frame(result, run_id), _runs_row(run_id)))
    return pl.concat(parts)


def test_tp_ranks_collapse_to_one_row_per_chunk_and_stage() -> None:
    expanded, plain = _points(True), _points(False)
    assert expanded.height == plain.height == 3 * 2 * 8
    assert (expanded["tp_ranks"] == 8).all() and (plain["tp_ranks"] == 1).all()
    key = ["run_id", "vstage", "request_id", "chunk_idx"]
    joined = expanded.join(plain, on=key, suffix="_plain")
    assert (joined["tau_ns"] == joined["tau_ns_plain"]).all()
    assert (joined["start_ns"] == joined["start_ns_plain"]).all()


def test_tp_ranks_do_not_narrow_the_slope_interval() -> None:
    # before: 8 identical copies per chunk were pooled as repeats (n_points 192 for 3 runs of 8
    # chunks) and the slope interval came out about sqrt(8) times too narrow
    fits = fit_curves(_points(True), n_boot=0)
    plain = fit_curves(_points(False), n_boot=0)
    assert (fits["n_points"] == 24).all() and (fits["n_runs"] == 3).all()
    width = (fits["slope_hi"] - fits["slope_lo"]).to_list()
    assert width == (plain["slope_hi"] - plain["slope_lo"]).to_list()
