"""Chunk latency SQL models and `tracereplay fit` on a small warehouse."""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from pipelines.cli import main
from pipelines.store import open_store
from tests.analysis import fixtures


def _run(run_id: str, model: str, taus: np.ndarray, chunk: int = 100, last: int = 100) -> dict:
    n = len(taus)
    chunks = pl.DataFrame(
        {
            "run_id": run_id,
            "rank": 0,
            "vstage": 0,
            "request_id": "r0",
            "chunk_idx": np.arange(n),
            "tokens": [chunk] * (n - 1) + [last],
            "prefix_tokens": np.arange(n) * chunk,
            "start_ns": np.arange(n) * 10**9,
            "end_ns": np.arange(n) * 10**9 + taus.astype(np.int64),
            "busy_ns": taus.astype(np.int64),
        }
    )
    runs = pl.DataFrame(
        [
            {
                "run_id": run_id,
                "source": "sim",
                "content_hash": run_id,
                "model": model,
                "schedule": "cpp",
                "chunk_size": chunk,
                "seq_len": chunk * (n - 1) + last,
            }
        ]
    )
    return {"runs": runs, "chunks": chunks}


def _warehouse(path) -> None:
    con = open_store(path).open()
    for s in range(3):
        _, tau = fixtures.linear(n=10, seed=s)
        tau[-1] *= 0.4
        con.write_run(f"dense{s}", _run(f"dense{s}", "dense", tau, last=40))
    con.write_run("dsa0", _run("dsa0", "dsa", fixtures.offset(n=12)[1]))
    con.close()


def test_sql_models_flag_the_remainder_chunk_and_aggregate_per_run(tmp_path) -> None:
    path = tmp_path / "w.duckdb"
    _warehouse(path)
    con = open_store(path).open()
    partial = con.execute(
        "select run_id, chunk_idx from int_chunk_tau where is_partial order by run_id"
    ).fetchall()
    assert partial == [("dense0", 9), ("dense1", 9), ("dense2", 9)]
    rows = con.execute(
        "select count(*), sum(n_requests), count(distinct run_id) from fct_tau_by_chunk"
    ).fetchone()
    assert rows == (42, 42, 4)
    con.close()


def test_fit_command_prints_one_curve_per_configuration(tmp_path, capsys) -> None:
    path = tmp_path / "w.duckdb"
    _warehouse(path)
    assert main(["fit", "--warehouse", str(path), "--json"]) == 0
    curves = {c["model"]: c for c in json.loads(capsys.readouterr().out)["curves"]}
    assert set(curves) == {"dense", "dsa"}
    assert curves["dense"]["n_runs"] == 3 and curves["dense"]["k_max"] == 8
    assert curves["dense"]["verdict"] == "linear"
    assert curves["dsa"]["verdict"] == "flattened"

    assert main(["fit", "--warehouse", str(path), "--model", "dsa"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:2]] == ["dsa"] and not lines[2]
    assert any("flattened" in line for line in lines)
    assert "no curve's runs name their attention" in "\n".join(lines)


def test_fit_command_without_a_warehouse_is_a_bad_input(tmp_path) -> None:
    assert main(["fit", "--warehouse", str(tmp_path / "missing.duckdb")]) == 2


def test_fit_segments_ingested_runs_that_have_markers_but_no_chunks(tmp_path, capsys) -> None:
    path = tmp_path / "w.duckdb"
    _, tau = fixtures.linear(n=12, seed=5)
    rows, t = [], 0
    for k, busy in enumerate(tau.astype(np.int64)):
        name = f"chunk[req=r0,k={k},vs=0,tokens=100,prefix={100 * k}]"
        rows.append({"lane": "host", "name": name, "start_ns": t, "dur_ns": int(busy) + 10})
        rows.append({"lane": "compute", "name": "kernel", "start_ns": t + 5, "dur_ns": int(busy)})
        t += int(busy) + 1000
    slices = pl.DataFrame(rows).with_columns(
        pl.lit("traced").alias("run_id"), pl.lit(0, pl.Int32).alias("rank")
    )
    runs = _run("traced", "traced-model", tau)["runs"]
    con = open_store(path).open()
    con.write_run("traced", {"runs": runs, "slices": slices})
    con.close()
    assert main(["fit", "--warehouse", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    (curve,) = json.loads(captured.out)["curves"]
    assert (curve["model"], curve["n_points"], curve["verdict"]) == ("traced-model", 12, "linear")
    assert "segmented 1 run" in captured.err
    assert main(["fit", "--warehouse", str(path), "--json", "--no-segment"]) == 0
    assert json.loads(capsys.readouterr().out)["curves"] == []
