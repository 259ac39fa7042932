"""A latency table's curve judged at request lengths (table_points.at_contexts, `--context`), the
a/b straddle note, the stacked leave-one-out screen and a fit's progress line (issue 32,
docs/tau_k.md §4 "Judged at request lengths", "Fitting a whole table")."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.analysis.tau import outliers
from pipelines.analysis.tau.curves import fit_curves
from pipelines.analysis.tau.flattening import flat_bound
from pipelines.analysis.tau.table_points import (
    DEFAULT_CONTEXTS,
    at_contexts,
    parse_contexts,
    request_chunks,
)
from pipelines.analysis.tau.verdicts import STRADDLES, classify

GEOMETRIC = (0, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288)
"""A table's prefixes on a gapped grid, as aiconfigurator measures them (to 512K here)."""


def _table(
    chunk: int, a_over_b: float, run_id: str = "lt-0001", noise: float = 0.0
) -> pl.DataFrame:
    """Points of one table curve tau = a/b + k (ms) at the grid's multiples of `chunk`,
    seq_len the longest prefix + chunk, columns of int_table_tau."""
    rng = np.random.default_rng(0)
    prefixes = [p for p in GEOMETRIC if p % chunk == 0]
    k = np.array([p // chunk for p in prefixes])
    tau = (a_over_b + k) * 1e6 * (1 + noise * rng.standard_normal(len(k)))
    return pl.DataFrame(
        {
            "run_id": run_id,
            "source": "test",
            "model": "m",
            "operator": "dsa",
            "attention": "sparse",
            "hardware": "h",
            "tp": 1,
            "chunk_size": chunk,
            "seq_len": max(prefixes) + chunk,
            "vstage": 0,
            "request_id": "rep1",
            "chunk_idx": k,
            "prefix_tokens": prefixes,
            "tokens": chunk,
            "tau_ns": tau,
            "is_partial": False,
        }
    )


def test_contexts_parse_as_tokens_and_refuse_anything_else() -> None:
    assert DEFAULT_CONTEXTS == (65536, 131072, 262144, 524288)
    assert parse_contexts("64K,128k, 1M,131072") == (65536, 131072, 1048576)
    assert parse_contexts("none") == ()
    for bad in ("12x", "", "-4K", "K", "1.5K", "１２８K", "1_000", "0x10"):
        with pytest.raises(ValueError, match="not a request length"):
            parse_contexts(bad)
    assert request_chunks(131072, 8192) == 16 and request_chunks(None, 8192) is None


def test_a_table_curve_is_cut_at_each_shorter_length_and_a_run_never() -> None:
    table = _table(4096, 10.0)
    run = table.with_columns(pl.lit("run-1").alias("run_id"))
    frame = at_contexts(pl.concat([table, run]), (65536, 131072, 10**7))
    lengths = frame.group_by("run_id", "seq_len").agg(pl.col("chunk_idx").sort()).sort("seq_len")
    whole = table["seq_len"][0]  # 524288 + 4096
    assert lengths.filter(pl.col("run_id") == "run-1")["seq_len"].to_list() == [whole]
    cut = {
        r["seq_len"]: r["chunk_idx"]
        for r in lengths.filter(pl.col("run_id") == "lt-0001").rows(named=True)
    }
    # a length at or past the whole range adds nothing; chunks that end within L are kept
    assert sorted(cut) == [65536, 131072, whole]
    assert cut[65536] == [0, 1, 2, 4, 8]  # prefixes 0, 4K, 8K, 16K, 32K: (k + 1) * 4K <= 64K
    assert cut[131072] == [0, 1, 2, 4, 8, 16]
    assert at_contexts(table, ()).equals(table)


def test_a_curve_flattened_at_a_stated_length_is_linear_over_the_whole_table() -> None:
    """a/b 10 at 4K chunks: N = 129 over the table's 516K (r* 44.3: linear), N = 16 at 64K
    (r* 4.31: flattened); N is the request's chunks (seq_len / chunk), not the last measured
    index + 1 (k = 8 at 64K on this grid: r*(9) would be 3.0)."""
    rows = fit_curves(at_contexts(_table(4096, 10.0, noise=0.002), (65536,)), n_boot=50)
    rows = {r["seq_len"]: r for r in rows.rows(named=True)}
    whole, short = rows[524288 + 4096], rows[65536]
    assert whole["verdict"] == "linear" and whole["ab_flat_bound"] == pytest.approx(
        flat_bound(129), rel=1e-9
    )
    assert short["k_max"] == 8 and short["ab_flat_bound"] == pytest.approx(flat_bound(16))
    assert short["verdict"] == "flattened", short["evidence"]
    for row in (whole, short):
        assert row["ab_lo"] < 10 < row["ab_hi"]


def test_a_linear_curve_whose_ratio_interval_reaches_the_bound_says_so() -> None:
    """a/b 4.2 with 3 % noise over 16 chunks: the interval straddles r*(16) = 4.31; the label
    stays `linear` (flattened needs the whole interval beyond), the evidence names it; a/b 2
    lies well below and carries no such note."""
    notes = {}
    for ab in (2.0, 4.2):
        for seed in range(4):
            rng = np.random.default_rng(seed)
            k = np.arange(16.0)
            tau = (ab + k) * (1 + 0.03 * rng.standard_normal(16)) * 1e6
            points = pl.DataFrame({"run_id": "lt-x", "chunk_idx": k.astype(int), "tau_ns": tau})
            row = fit_curves(points, keys=(), drop_partial=False, n_boot=50).row(0, named=True)
            assert row["verdict"] == "linear", row["evidence"]
            straddles = row["ab_lo"] < flat_bound(16) < row["ab_hi"]
            assert (STRADDLES in row["evidence"]) == straddles
            notes[ab] = notes.get(ab, 0) + straddles
    assert notes[2.0] == 0 and notes[4.2] >= 2  # the case is exercised


def test_the_stacked_leave_one_out_screen_is_the_one_point_at_a_time_screen() -> None:
    """_studentised_pass (every point at once, stacked SVD) against _studentised (lstsq per
    point and shape): t, prediction and df to rounding, on straight, kinked, first-chunk and
    gapped curves, and on the tie of chunk 0's own path with a hinge at the next index (each
    fits chunk 0 alone: the earlier shape is kept either way)."""
    rng = np.random.default_rng(3)
    curves = []
    for _ in range(12):
        k = np.arange(12.0)
        tau = (3 + k + 2 * np.maximum(k - 6, 0)) * (1 + 0.03 * rng.standard_normal(12))
        tau[0] *= rng.choice([1.0, 0.3])
        curves.append((k, tau))
    gapped = np.array([0.0, 2, 3, 4, 6, 8, 10, 12, 16, 32, 64, 128, 159])
    step = 2.0e6 + 1.5e4 * gapped + np.where(gapped == 0, -1.2e6, 0)
    curves.append((gapped, step * (1 + 0.01 * rng.standard_normal(len(gapped)))))
    for k, tau in curves:
        fast = outliers._studentised_pass(k, tau)
        for i in range(len(k)):
            slow = outliers._studentised(k, tau, i)
            assert fast[i][2] == slow[2]
            assert fast[i][0] == pytest.approx(slow[0], rel=1e-6, abs=1e-9)
            assert fast[i][1] == pytest.approx(slow[1], rel=1e-9)


def test_a_long_fit_reports_progress_on_stderr(capsys) -> None:
    from pipelines.cli.fit import _progress_printer

    progress = _progress_printer(first_after_s=0.0, every_s=0.0)
    points = pl.concat([_table(c, 10.0) for c in (1024, 2048, 4096)])
    fit_curves(points, n_boot=20, progress=progress)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("tracereplay fit: 0 of 3 configurations fitted")
    assert lines[-1].startswith("tracereplay fit: 3 of 3 configurations fitted")


def test_fit_judges_an_ingested_table_at_the_stated_lengths(tmp_path, capsys) -> None:
    """End to end: a generic table ingested, `tracereplay fit --context 64K --json` stores the
    curve at its whole range and as a 64K request; a bad length is a one-line error, exit 2."""
    import json

    from pipelines.cli import main

    table = tmp_path / "dsa.csv"
    rows = ["tokens,prefix,time_ms,operator,attention"]
    rng = np.random.default_rng(1)
    for prefix in GEOMETRIC:
        k = prefix // 4096
        if prefix % 4096 == 0:
            ms = (10 + k) * (1 + 0.002 * rng.standard_normal())
            rows.append(f"4096,{prefix},{ms:.6f},dsa,sparse")
    table.write_text("\n".join(rows) + "\n")
    warehouse = tmp_path / "w.duckdb"
    assert main(["ingest", str(table), "--warehouse", str(warehouse), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["fit", "--warehouse", str(warehouse), "--context", "64K", "--json"]) == 0
    curves = {c["seq_len"]: c for c in json.loads(capsys.readouterr().out)["curves"]}
    assert sorted(curves) == [65536, 524288 + 4096]
    assert curves[65536]["verdict"] == "flattened" and curves[65536]["k_max"] == 8
    assert curves[524288 + 4096]["verdict"] == "linear"
    assert main(["fit", "--warehouse", str(warehouse), "--context", "12x"]) == 2
    assert "--context: not a request length: '12X'" in capsys.readouterr().err


def test_table_verdicts_count_a_curve_flagged_at_some_length_once() -> None:
    from pipelines.analysis.tau.table_verdicts import acceptance, by_curve, table_rows

    base = {"operator": "msa_context_module kv=bf16", "attention": "sparse", "chunk_size": 8192}
    base["knee_at"] = None
    rows = [
        {**base, "seq_len": 1048576, "verdict": "linear", "evidence": "slope ..."},
        {**base, "seq_len": 131072, "verdict": "flattened", "evidence": "a/b ..."},
        {**base, "seq_len": 65536, "verdict": "too_short", "evidence": "4 chunk indices < 5"},
        {
            **base,
            "operator": "dsa_context_module",
            "seq_len": 163840,
            "verdict": "linear",
            "evidence": f"slope ...; {STRADDLES}: the a/b interval reaches 9, beyond r*=8.3",
        },
    ]
    frame = table_rows(rows)
    curves = by_curve(frame).sort("module")
    assert curves["flagged_at_any"].to_list() == [False, True]
    assert curves["flagged_at"].to_list() == [None, 131072]
    assert curves["verdict"].to_list() == ["linear", "linear"]  # at the whole range
    got = acceptance(frame)
    assert got["sparse module curves flagged"]["flagged"] == 0  # whole range, as before
    at_any = got["sparse module curves flagged at some request length"]
    assert (at_any["flagged"], at_any["decided"]) == (1, 2)
    assert at_any["not_flagged_flattened_not_ruled_out"] == 1


def test_the_policy_judges_a_table_curve_once_over_its_lengths() -> None:
    """verdict_policy: a sparse table curve flagged at 128K but linear over its whole 1M meets
    'sparse flagged' (flagged at a length a user runs); one linear at every length offends it;
    a run's curve is judged as before."""
    from pipelines.analysis.tau.verdict_policy import SPARSE_FLAGGED, check_expectation

    def row(operator, seq_len, verdict):
        return {
            "operator": operator,
            "attention": "sparse",
            "schedule": None,
            "chunk_size": 8192,
            "seq_len": seq_len,
            "vstage": 0,
            "model": "m",
            "n_runs": 1,
            "verdict": verdict,
        }

    fits = pl.DataFrame(
        [
            row("msa", 1048576, "linear"),
            row("msa", 131072, "flattened"),
            row("msa", 65536, "too_short"),
            row("dsa", 163840, "linear"),
            row("dsa", 131072, "linear"),
            row(None, 131072, "linear"),  # a run
        ]
    )
    result = check_expectation(fits, SPARSE_FLAGGED)
    assert result.covered.height == 3  # msa, dsa, the run
    assert sorted(result.offending["seq_len"].to_list()) == [131072, 163840]  # the run, dsa whole
    assert result.covered.filter(pl.col("verdict") == "flattened")["seq_len"].to_list() == [131072]


def test_a_table_jump_is_a_knee_between_two_measured_indices() -> None:
    """A table curve on a dense path (steep) to k = 3, then x1.9 and a flat sparse path from
    k = 4 on (DSA at 512-token chunks, top-k 2K): `knee` at 3->4 (fits._jump, the broken line);
    a run's curve has no jump test (its level steps are `drift`)."""
    from pipelines.analysis.tau.fits import fit_curve

    rng = np.random.default_rng(2)
    k = np.array([0, 1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 32, 64, 128, 255], float)
    tau = np.where(k < 4, 0.75 + 0.05 * k, 1.65 + 0.009 * (k - 4)) * 1e6
    tau *= 1 + 0.003 * rng.standard_normal(len(k))
    table = fit_curve(k, tau, n_boot=20, independent=True)
    assert table.jump_k == 4 and table.jump_from_k == 3 and table.jump_p < 0.01
    assert classify(table).label == "knee" and classify(table).knee_at == "3->4"
    run = fit_curve(k, tau, n_boot=20)
    assert np.isnan(run.jump_k) and np.isnan(run.jump_p)
