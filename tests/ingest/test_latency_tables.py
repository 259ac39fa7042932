"""Operator-latency tables: recognised by `ingest`, stored as latency_points, bad rows quarantined
one by one, fitted by `fit` as tau_k curves per chunk size (docs/latency_tables.md).

The self-made table (committed) follows t(c, p) = 20 + 0.01 c + 0.0002 c p us, so tau_k at chunk c
is exactly a + b k with a = 20 + 0.01 c us and b = 0.0002 c^2 us. The real Vidur tables are local,
git-ignored copies (tests/data/latency_tables/vidur/SOURCES.md); their figures are checked against
ones computed here from the raw CSV with the csv module."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.cli import main
from pipelines.ingest.discover import discover
from pipelines.ingest.load import ingest_paths
from pipelines.ingest.readers.latency_tables import (
    GENERIC,
    VIDUR_ATTENTION,
    VIDUR_MLP,
    read_table,
    sniff,
)
from pipelines.store import open_store

DATA = Path(__file__).resolve().parents[1] / "data" / "latency_tables"
SELF_MADE = DATA / "self_made" / "generic_attention.csv"
VIDUR = DATA / "vidur"
VIDUR_ATTN = VIDUR / "e2d00e9" / "data" / "profiling" / "a100" / "attention.csv"
VIDUR_MLP_FILE = VIDUR / "e2d00e9" / "data" / "profiling" / "a100" / "mlp.csv"
VIDUR_COMPUTE_MLP = (
    VIDUR / "7d47513" / "data/profiling/compute/a100/codellama/CodeLlama-34b-Instruct-hf/mlp.csv"
)
needs_vidur = pytest.mark.skipif(
    not VIDUR_ATTN.is_file() or not VIDUR_MLP_FILE.is_file(),
    reason="real Vidur tables absent (tests/data/latency_tables/vidur/SOURCES.md: how to get them)",
)


def _law_us(c: int, p: int) -> float:
    return 20 + 0.01 * c + 0.0002 * c * p


# --- the self-made table (runs in CI) -------------------------------------------------------


def test_self_made_table_is_read_with_its_two_bad_rows_set_aside() -> None:
    assert sniff(SELF_MADE) == GENERIC
    table = read_table(SELF_MADE)
    points = table.points
    assert points.height == 17  # 16 chunk points + the p = 256 row; lines 19, 20 set aside
    assert set(points["line"].to_list()) == set(range(2, 19))
    (item,) = table.quarantined
    assert item.reason == "invalid_rows"
    assert "line 19: negative_time" in item.detail and "line 20: invalid_tokens" in item.detail
    row = points.filter((pl.col("tokens") == 512) & (pl.col("prefix_tokens") == 1024)).row(
        0, named=True
    )
    assert row["time_ns"] == round(_law_us(512, 1024) * 1000)
    assert (row["source"], row["hardware"], row["model"], row["operator"]) == (
        "self-made",
        "cpu-x86",
        "toy-attn",
        "attention",
    )


def test_a_tag_overrides_the_table_and_names_an_unnamed_operator(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text("tokens,prefix,time_ms\n128,0,0.5\n128,128,0.75\n")
    table = read_table(path, {"hardware": "h200", "model": "m", "operator": "mla"})
    assert table.points["hardware"].unique().to_list() == ["h200"]
    assert table.points["operator"].unique().to_list() == ["mla"]
    assert table.points["time_ns"].to_list() == [500_000, 750_000]


def test_parquet_generic_table(tmp_path: Path) -> None:
    path = tmp_path / "export.parquet"
    pl.DataFrame({"tokens": [64, 64], "prefix": [0, 64], "time_ns": [1000, 1500]}).write_parquet(
        path
    )
    assert sniff(path) == GENERIC
    assert read_table(path).points["time_ns"].to_list() == [1000, 1500]


def test_discovery_finds_tables_and_leaves_other_csv_alone(tmp_path: Path) -> None:
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    (tmp_path / "t.csv").write_bytes(SELF_MADE.read_bytes())
    found = discover([tmp_path])
    assert found.tables == [(tmp_path / "t.csv").resolve()]
    assert found.runs == [] and found.quarantined == []


def test_ingest_stores_quarantines_and_is_idempotent(tmp_path: Path) -> None:
    store = open_store(tmp_path / "w.duckdb")
    report = ingest_paths([SELF_MADE], store, progress=False)
    (table,) = report.tables
    assert table.status == "loaded" and table.points == 17
    assert [q.reason for q in report.quarantined] == ["invalid_rows"]
    again = ingest_paths([SELF_MADE], store, progress=False)
    assert again.tables[0].status == "unchanged"
    with store.session(read_only=True) as session:
        stored = session.con.execute("select count(*) from latency_points").fetchone()[0]
        reasons = session.con.execute("select reason from quarantine").fetchall()
    assert stored == 17 and reasons == [("invalid_rows",)]


def test_new_bytes_at_a_known_path_replace_its_points(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text("tokens,prefix,time_ms\n128,0,0.5\n128,128,0.75\n128,256,1.0\n")
    store = open_store(tmp_path / "w.duckdb")
    first = ingest_paths([path], store, progress=False).tables[0]
    path.write_text("tokens,prefix,time_ms\n128,0,0.5\n128,128,0.8\n")
    second = ingest_paths([path], store, progress=False).tables[0]
    assert (first.status, second.status) == ("loaded", "replaced")
    assert first.table_id == second.table_id
    with store.session(read_only=True) as session:
        times = session.con.execute(
            "select time_ns from latency_points order by prefix_tokens"
        ).fetchall()
    assert times == [(500_000,), (800_000,)]


def test_the_report_names_a_fact_the_table_does_not_share_by_all_its_values(
    tmp_path: Path, capsys
) -> None:
    """One file of two tp degrees and two models (Vidur's newer mlp.csv holds tp 1/2/4/8, an
    aiconfigurator DSA file five models): `ingest --json` said the first row's `tp: 1` (and its
    model) for the whole table."""
    path = tmp_path / "export.csv"
    rows = [f"{m},{tp},{t},0,{t / tp}" for m in ("a", "b") for tp in (2, 1) for t in (64, 128)]
    path.write_text("\n".join(["model,tp,tokens,prefix,time_us", *rows]) + "\n")
    assert main(["ingest", str(path), "--warehouse", str(tmp_path / "w.duckdb"), "--json"]) == 0
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    assert table["facts"] == {"source": "table", "model": ["a", "b"], "tp": [1, 2]}
    assert main(["ingest", str(path), "--warehouse", str(tmp_path / "v.duckdb")]) == 0
    assert "source=table model=a,b tp=1,2" in capsys.readouterr().out


def test_fit_recovers_the_self_made_law(tmp_path: Path, capsys) -> None:
    warehouse = str(tmp_path / "w.duckdb")
    assert main(["ingest", str(SELF_MADE), "--warehouse", warehouse, "--json"]) == 2  # bad rows
    capsys.readouterr()
    assert main(["fit", "--warehouse", warehouse, "--json"]) == 0
    fits = json.loads(capsys.readouterr().out)
    rows = fits["curves"] if isinstance(fits, dict) else fits
    curves = {r["chunk_size"]: r for r in rows if r.get("operator") == "attention"}
    assert sorted(curves) == [256, 512]
    for c, row in curves.items():
        a, b = (20 + 0.01 * c) * 1000, 0.0002 * c * c * 1000
        assert row["n_points"] == 8 and row["model"] == "toy-attn"
        # the table's times are stored in whole ns: each point is off the law by < 0.5 ns
        assert row["intercept"] == pytest.approx(a, abs=1.0)
        assert row["slope"] == pytest.approx(b, abs=1.0)
        assert row["r2"] == pytest.approx(1.0, abs=1e-9)
        assert row["ab_ratio"] == pytest.approx(a / b, rel=1e-4)


def test_fit_refits_table_curves_only_when_a_table_changed(tmp_path: Path) -> None:
    from pipelines.analysis.tau.fit_store import FitOptions, fit_and_store

    path = tmp_path / "export.csv"
    rows = "".join(f"128,{128 * k},{1 + 0.5 * k}\n" for k in range(6))
    path.write_text("tokens,prefix,time_ms\n" + rows)
    store = open_store(tmp_path / "w.duckdb")
    options = FitOptions(n_boot=50)
    ingest_paths([path], store, progress=False)
    with store.session() as session:
        first = fit_and_store(session, options)
        again = fit_and_store(session, options)
    assert (first.refitted, first.points) == (1, 6)
    assert (again.refitted, again.points) == (0, 0)
    path.write_text("tokens,prefix,time_ms\n" + rows.replace("128,640,3.5", "128,640,4.5"))
    ingest_paths([path], store, progress=False)
    with store.session() as session:
        third = fit_and_store(session, options)
    assert third.refitted == 1
    slopes = [r.fits["slope"][0] for r in (first, third)]
    assert slopes[1] > slopes[0]


def test_fit_table_names_the_operator(tmp_path: Path, capsys) -> None:
    warehouse = str(tmp_path / "w.duckdb")
    main(["ingest", str(SELF_MADE), "--warehouse", warehouse])
    capsys.readouterr()
    main(["fit", "--warehouse", warehouse])
    out = capsys.readouterr().out
    assert "table:attention" in out and max(len(line) for line in out.splitlines()) <= 120


def test_layer_curve_adds_the_rest_of_the_layer(tmp_path: Path) -> None:
    """Vidur layout, self-made: the layer curve is the attention file's operators at (c, p)
    plus the MLP file's operators at c tokens, the embedding left out."""
    stats = ("min", "max", "mean", "median", "std")

    def cells(ops: dict[str, float]) -> list[str]:
        return [str(v) for t in ops.values() for v in (t, t, t, t, 0.0)]

    folder = tmp_path / "data" / "profiling" / "x100"
    folder.mkdir(parents=True)
    attn_ops = ("attn_input_reshape", "attn_prefill", "attn_output_reshape")
    header = [f"time_stats.{op}.{s}" for op in attn_ops for s in stats]
    header += ["n_embd", "n_q_head", "n_kv_head", "num_tensor_parallel_workers"]
    header += ["batch_size", "prefill_chunk_size", "kv_cache_size", "is_prefill"]
    with (folder / "attention.csv").open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(header)
        for k in range(4):
            ops = {"attn_input_reshape": 0.001, "attn_prefill": 0.1 + 0.05 * k}
            ops["attn_output_reshape"] = 0.002
            out.writerow([*cells(ops), 4096, 32, 8, 1, 1, 256, 256 * k, "True"])
        out.writerow([*cells(dict.fromkeys(attn_ops, 0.0)), 4096, 32, 8, 1, 4, 0, 512, "False"])
    mlp_ops = {"emb": 5.0, "attn_pre_proj": 0.3, "mlp_up_proj": 0.6, "add": 0.01}
    header = [f"time_stats.{op}.{s}" for op in mlp_ops for s in stats]
    header += ["n_embd", "n_head", "n_kv_head", "num_tensor_parallel_workers", "num_tokens"]
    with (folder / "mlp.csv").open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(header)
        out.writerow([*cells(mlp_ops), 4096, 32, 8, 1, 256])
    store = open_store(tmp_path / "w.duckdb")
    report = ingest_paths([tmp_path / "data"], store, progress=False)
    assert sorted(t.layout for t in report.tables) == [VIDUR_ATTENTION, VIDUR_MLP]
    assert report.tables[0].left_out in ({"decode_rows": 1}, {})
    with store.session(read_only=True) as session:
        rows = session.con.execute(
            "select operator, chunk_idx, tau_ns, hardware, model from int_table_tau"
            " order by operator, chunk_idx"
        ).fetchall()
    attention = [r[2] for r in rows if r[0] == "attention"]
    layer = [r[2] for r in rows if r[0] == "layer"]
    assert attention == [round((0.1 + 0.05 * k) * 1e6) for k in range(4)]
    assert layer == [round((0.103 + 0.05 * k + 0.91) * 1e6) for k in range(4)]
    assert {(r[3], r[4]) for r in rows} == {("x100", "d4096-q32-kv8")}


# --- the real Vidur tables (local copies; skipped when absent) ------------------------------


def _independent_attention(path: Path) -> dict[tuple[int, int], list[dict[str, float]]]:
    """(chunk, prefix) -> the prefill rows' operator medians (ms), read with the csv module."""
    out: dict[tuple[int, int], list[dict[str, float]]] = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["is_prefill"] != "True" or row["batch_size"] != "1":
                continue
            key = (int(row["prefill_chunk_size"]), int(row["kv_cache_size"]))
            medians = {
                op: float(row[f"time_stats.{op}.median"])
                for op in ("attn_prefill", "attn_input_reshape", "attn_output_reshape")
            }
            out.setdefault(key, []).append(medians)
    return out


def _independent_rest(path: Path) -> dict[int, float]:
    """num_tokens -> the sum over the MLP file's operators but `emb` of their median (ms),
    repeated rows of one num_tokens averaged per operator first."""
    per_op: dict[tuple[int, str], list[float]] = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            for column, value in row.items():
                parts = column.split(".")
                is_median = len(parts) == 3 and parts[0] == "time_stats" and parts[2] == "median"
                if is_median and parts[1] != "emb":
                    key = (int(row["num_tokens"]), parts[1])
                    per_op.setdefault(key, []).append(float(value))
    rest: dict[int, float] = {}
    for (tokens, _), values in per_op.items():
        rest[tokens] = rest.get(tokens, 0.0) + sum(values) / len(values)
    return rest


def _ols(ks: list[int], ys: list[float]) -> tuple[float, float, float]:
    n = len(ks)
    mk, my = sum(ks) / n, sum(ys) / n
    sxx = sum((k - mk) ** 2 for k in ks)
    b = sum((k - mk) * (y - my) for k, y in zip(ks, ys, strict=True)) / sxx
    a = my - b * mk
    ss_res = sum((y - a - b * k) ** 2 for k, y in zip(ks, ys, strict=True))
    ss_tot = sum((y - my) ** 2 for y in ys)
    return a, b, 1 - ss_res / ss_tot


@pytest.fixture(scope="module")
def vidur_warehouse(tmp_path_factory) -> Path:
    warehouse = tmp_path_factory.mktemp("vidur") / "w.duckdb"
    report = ingest_paths([VIDUR / "e2d00e9"], open_store(warehouse), progress=False)
    assert report.quarantined == []
    assert sorted(t.layout for t in report.tables) == [VIDUR_ATTENTION, VIDUR_MLP]
    return warehouse


@needs_vidur
def test_vidur_points_match_the_raw_file(vidur_warehouse: Path) -> None:
    raw = _independent_attention(VIDUR_ATTN)
    rest = _independent_rest(VIDUR_MLP_FILE)
    with open_store(vidur_warehouse).session(read_only=True) as session:
        rows = session.con.execute(
            "select operator, chunk_size, chunk_idx, request_id, tau_ns, hardware, model, tp"
            " from int_table_tau"
        ).fetchall()
    assert {r[5:] for r in rows} == {("a100", "d8192-q64-kv8", 2)}
    expected_attention = {
        (c, p // c, f"rep{i + 1}"): round(m["attn_prefill"] * 1e6)
        for (c, p), reps in raw.items()
        if p % c == 0
        for i, m in enumerate(reps)
    }
    got_attention = {(r[1], r[2], r[3]): r[4] for r in rows if r[0] == "attention"}
    assert got_attention == expected_attention
    got_layer = {(r[1], r[2], r[3]): r[4] for r in rows if r[0] == "layer"}
    expected_layer = {
        (c, p // c, f"rep{i + 1}"): round((sum(m.values()) + rest[c]) * 1e6)
        for (c, p), reps in raw.items()
        if p % c == 0 and c in rest
        for i, m in enumerate(reps)
    }
    assert got_layer.keys() == expected_layer.keys()
    for key, value in expected_layer.items():
        assert abs(got_layer[key] - value) <= 2, key  # ns rounding of each operator


@pytest.mark.slow  # a real-table end-to-end fit (CI runs it: .ci/run); fit stays in test_fit_cli
@needs_vidur
def test_vidur_fits_match_an_independent_least_squares(vidur_warehouse: Path, capsys) -> None:
    raw = _independent_attention(VIDUR_ATTN)
    assert main(["fit", "--warehouse", str(vidur_warehouse), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["curves"] if isinstance(out, dict) else out
    fits = {(r["operator"], r["chunk_size"]): r for r in rows if r.get("operator")}
    for c in (256, 512, 1024):
        ks, ys = [], []
        for (chunk, p), reps in sorted(raw.items()):
            if chunk == c and p % c == 0:
                ks += [p // c] * len(reps)
                ys += [m["attn_prefill"] * 1e6 for m in reps]
        a, b, r2 = _ols(ks, ys)
        row = fits[("attention", c)]
        assert row["n_points"] == len(ks)
        # the fit weights points by 1/tau^2 (independent points, rho = 0), not OLS: the same
        # line within 2 %
        assert row["slope"] == pytest.approx(b, rel=0.02)
        assert row["intercept"] == pytest.approx(a, rel=0.02)
        assert row["r2"] == pytest.approx(r2, abs=0.005)
        assert row["ab_lo"] <= row["ab_ratio"] <= row["ab_hi"]
    assert fits[("layer", 512)]["ab_ratio"] > 10 * fits[("attention", 512)]["ab_ratio"]


@pytest.mark.skipif(not VIDUR_COMPUTE_MLP.is_file(), reason="real Vidur compute mlp.csv absent")
def test_vidur_compute_layout_names_model_and_hardware_from_its_path() -> None:
    table = read_table(VIDUR_COMPUTE_MLP)
    assert table.layout == VIDUR_MLP and table.quarantined == []
    first = table.points.row(0, named=True)
    assert (first["hardware"], first["model"]) == ("a100", "codellama/CodeLlama-34b-Instruct-hf")
    with VIDUR_COMPUTE_MLP.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    ops = [c.split(".")[1] for c in rows[0] if c.endswith(".median")]
    assert table.points.height == len(rows) * len(ops)
    line2 = table.points.filter((pl.col("line") == 2) & (pl.col("operator") == "mlp_up_proj")).row(
        0, named=True
    )
    assert line2["time_ns"] == round(float(rows[0]["time_stats.mlp_up_proj.median"]) * 1e6)
    assert line2["tp"] == int(rows[0]["num_tensor_parallel_workers"])
