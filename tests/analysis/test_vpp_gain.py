"""Predicted VPP gain per configuration (pipelines.analysis.tau.vpp_gain) and its text block."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from pipelines.analysis.tau.bubble_pred import (
    cpp_bubble_stages,
    ttft_saving,
    vpp_bubble_stages,
)
from pipelines.analysis.tau.curves import fit_curves
from pipelines.analysis.tau.vpp_gain import predicted_gains
from pipelines.cli._vpp_gain import format_gains
from pipelines.replay.tables import chunks_frame
from pipelines.sim.run import simulate

CHUNK = 16384


def _runs(count: int, noise: float) -> pl.DataFrame:
    frames = []
    for r in range(count):
        result = simulate(
            8 * CHUNK,
            "vpp",
            model="deepseek-v3.1",
            chunk_size=CHUNK,
            comm=None,
            collectives=None,
            noise=noise,
            seed=100 + r,
        )
        frames.append(chunks_frame(result, f"run{r}"))
    return pl.concat(frames).with_columns(
        pl.lit("deepseek-v3.1").alias("model"),
        pl.lit("vpp").alias("schedule"),
        pl.lit(CHUNK).alias("chunk_size"),
        pl.lit(8 * CHUNK).alias("seq_len"),
    )


def _truth() -> tuple[float, float]:
    clean = chunks_frame(
        simulate(
            8 * CHUNK, "vpp", model="deepseek-v3.1", chunk_size=CHUNK, comm=None, collectives=None
        ),
        "x",
    )
    stages = [
        clean.filter(pl.col("vstage") == v).sort("chunk_idx")["busy_ns"].to_numpy()
        for v in range(4)
    ]
    s = np.stack(stages).astype(float)
    vpp = float(vpp_bubble_stages(s))
    return vpp, float(cpp_bubble_stages(s)) - vpp


def test_one_row_per_configuration_with_a_saving_inside_its_interval() -> None:
    fits = fit_curves(_runs(3, 0.03), keys=("model", "schedule", "chunk_size", "seq_len", "vstage"))
    gains = predicted_gains(fits)
    assert gains.height == 1
    row = gains.row(0, named=True)
    assert row["n_k"] == 8
    assert row["ttft_saving_lo"] <= row["ttft_saving"] <= row["ttft_saving_hi"]
    assert row["ttft_saving"] == pytest.approx(
        ttft_saving(row["vpp_bubble_pred"], row["cpp_bubble_pred"] - row["vpp_bubble_pred"])
    )
    vpp, gain = _truth()
    assert row["ttft_saving_lo"] <= ttft_saving(vpp, gain) <= row["ttft_saving_hi"]
    # DeepSeek's stages are close to proportional: the straight-line g is near the exact one
    assert row["analytic_saving"] == pytest.approx(row["ttft_saving"], abs=0.02)
    assert row["analytic_saving_lo"] <= row["analytic_saving"] <= row["analytic_saving_hi"]
    text = format_gains(fits)
    assert "saves" in text and " TTFT;" in text and "[no interval]" not in text
    assert max(len(line) for line in text.splitlines()) <= 120


def test_one_run_prints_no_interval_and_says_why() -> None:
    fits = fit_curves(_runs(1, 0.03), keys=("model", "schedule", "chunk_size", "seq_len", "vstage"))
    row = predicted_gains(fits).row(0, named=True)
    assert math.isnan(row["ttft_saving_lo"]) and math.isfinite(row["ttft_saving"])
    text = format_gains(fits)
    assert "[no interval]" in text and "one run cannot tell" in text


def test_nothing_to_predict_is_an_empty_block() -> None:
    assert format_gains(pl.DataFrame()) == ""
    assert predicted_gains(pl.DataFrame()).is_empty()


def test_fit_command_prints_the_predicted_gain(tmp_path, capsys) -> None:
    import json

    from pipelines.cli import main
    from pipelines.store import open_store

    path = tmp_path / "w.duckdb"
    con = open_store(path).open()
    chunks = _runs(3, 0.03)
    for r in range(3):
        run_id = f"run{r}"
        runs = pl.DataFrame(
            [
                {
                    "run_id": run_id,
                    "source": "sim",
                    "content_hash": run_id,
                    "model": "deepseek-v3.1",
                    "schedule": "vpp",
                    "chunk_size": CHUNK,
                    "seq_len": 8 * CHUNK,
                    "pp": 2,
                    "vp": 2,
                }
            ]
        )
        mine = chunks.filter(pl.col("run_id") == run_id).select(
            "run_id",
            "rank",
            "vstage",
            "request_id",
            "chunk_idx",
            "tokens",
            "prefix_tokens",
            "start_ns",
            "end_ns",
            "busy_ns",
        )
        con.write_run(run_id, {"runs": runs, "chunks": mine})
    con.close()
    assert main(["fit", "--warehouse", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Predicted VPP gain" in out and " TTFT;" in out
    assert main(["fit", "--warehouse", str(path), "--json"]) == 0
    (gain,) = json.loads(capsys.readouterr().out)["vpp_gains"]
    assert (
        gain["n_k"] == 8 and gain["ttft_saving_lo"] <= gain["ttft_saving"] <= gain["ttft_saving_hi"]
    )
