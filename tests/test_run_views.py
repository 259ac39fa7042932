"""`tracereplay runs` and `tracereplay show` on the real sets and a simulated run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.analysis.runs.run_views import show_run
from pipelines.cli import main
from pipelines.ingest.load import ingest_paths
from pipelines.store import open_store

REAL_SETS = {
    "A": "msinsight/test/st/level2",
    "B0": "msinsight/test/data/pytorch/text/level0",
    "B1": "msinsight/test/data/pytorch/text/level1",
    "C": "msinsight/test/data/pytorch/db/level1",
    "D16": "msinsight/server/src/test/test_data",
    "G": "msprof-analyze",
    "K": "kineto",
}


@pytest.fixture(scope="module")
def real_warehouse(real_dir: Path, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("views") / "w.duckdb"
    con = open_store(target).open()
    try:
        ingest_paths([real_dir / p for p in REAL_SETS.values()], con, progress=False)
    finally:
        con.close()
    return target


def _run_ids(target: Path) -> dict[str, str]:
    con = open_store(target).open(read_only=True)
    try:
        return dict(con.execute("select origin, run_id from runs").fetchall())
    finally:
        con.close()


def test_show_breakdown_equals_the_profilers_where_it_has_one(real_warehouse: Path) -> None:
    con = open_store(real_warehouse).open(read_only=True)
    try:
        profiler = con.execute(
            "select run_id, rank, sum(stage_ns), sum(computing_ns), sum(free_ns)"
            " from step_breakdown where origin = 'profiler' group by 1, 2"
        ).fetchall()
        assert profiler, "the real sets carry profiler step rows"
        views = {}
        for run_id, rank, stage, computing, free in profiler:
            view = views.get(run_id) or views.setdefault(run_id, show_run(con, run_id, fit=False))
            row = view.breakdown.filter(view.breakdown["rank"] == rank).row(0, named=True)
            assert row["origin"] == "profiler"
            assert (row["stage_ns"], row["computing_ns"], row["free_ns"]) == (
                stage,
                computing,
                free,
            )
    finally:
        con.close()


def test_the_16_rank_set_uses_the_profiler_for_its_trimmed_ranks(real_warehouse: Path) -> None:
    """Issue 7 item 9: ranks 0-1 have a trimmed kernel_details.csv; their derived rows are
    marked incomplete and `show` uses the profiler's figures (291.7 / 294.6 ms), the other ranks
    the cluster summary's; ranks 8-15 carry the profiler's Bubble of 178-196 ms."""
    con = open_store(real_warehouse).open(read_only=True)
    try:
        (run_id,) = [r for o, r in _run_ids(real_warehouse).items() if o.endswith("test_data")]
        flags = con.execute(
            "select rank, complete from step_breakdown where run_id = ? and origin = 'derived'"
            " order by rank",
            [run_id],
        ).fetchall()
        assert flags == [(0, False), (1, False)]
        view = show_run(con, run_id, fit=False)
    finally:
        con.close()
    b = view.breakdown
    assert b.height == 16
    assert b["origin"].to_list() == ["profiler"] * 2 + ["cluster"] * 14
    assert b["stage_ns"][:2].to_list() == [291_698_000, 294_586_500]
    bubbles = b.filter(b["rank"] >= 8)["recv_wait_ns"].to_list()
    assert all(178e6 <= x <= 196e6 for x in bubbles)
    assert sum("incomplete" in n for n in view.notes) == 2


def test_show_prints_every_real_run(real_warehouse: Path, capsys) -> None:
    for run_id in _run_ids(real_warehouse).values():
        assert main(["show", run_id, "--warehouse", str(real_warehouse)]) == 0, run_id
        out = capsys.readouterr().out
        assert out.startswith(f"run {run_id}")
        assert max(len(line) for line in out.splitlines()) <= 120
        assert "no chunks" in out  # none of the real sets carries chunk markers


def test_set_a_shows_both_bubbles(real_warehouse: Path, capsys) -> None:
    (run_id,) = [r for o, r in _run_ids(real_warehouse).items() if o.endswith("level2")]
    assert main(["show", run_id, "--json", "--warehouse", str(real_warehouse)]) == 0
    view = json.loads(capsys.readouterr().out)
    rank2 = next(r for r in view["breakdown"] if r["rank"] == 2)
    assert rank2["recv_wait_ns"] == 0 and rank2["p2p_bubble_ns"] > 70_000_000
    assert any("rank 2: receive wait 0.0 ms" in n for n in view["notes"])
    assert view["top_kernels"] and view["top_comm_ops"]


def test_runs_lists_and_selects(real_warehouse: Path, capsys) -> None:
    assert main(["runs", "--warehouse", str(real_warehouse)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 120
    assert main(["runs", "source=kineto", "--json", "--warehouse", str(real_warehouse)]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert runs and {r["source"] for r in runs} == {"kineto"}
    assert main(["runs", "model=nothing-like-it", "--warehouse", str(real_warehouse)]) == 2
    assert "no run matches" in capsys.readouterr().err


def test_show_unknown_and_ambiguous(real_warehouse: Path, capsys) -> None:
    assert main(["show", "zzz", "--warehouse", str(real_warehouse)]) == 2
    assert "no run matching" in capsys.readouterr().err
    # a prefix every Ascend text run shares (`ascend-pt-<stem>-<collected>-<hash>`)
    assert main(["show", "ascend-pt-", "--warehouse", str(real_warehouse)]) == 2
    assert "runs (" in capsys.readouterr().err


def test_show_a_simulated_run_with_chunks_and_fit(tmp_path: Path, capsys) -> None:
    from pipelines.sim.run import simulate
    from pipelines.sim.writers_ascend import write_ascend_pt

    write_ascend_pt(simulate([65536], "cpp", chunk_size=16384, pp=2), tmp_path / "raw" / "cpp")
    target = str(tmp_path / "w.duckdb")
    assert main(["ingest", str(tmp_path / "raw"), "--warehouse", target, "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["runs"][0]["run_id"]
    assert main(["show", run_id, "--warehouse", target]) == 0
    out = capsys.readouterr().out
    assert "Chunks" in out and "τ_k fit" in out and "no chunks" not in out


def test_normalise_op(warehouse) -> None:
    """One rule for show and the op mart: the op_name macro every connection gets."""

    def normalise_op(name: str) -> str:
        return warehouse.execute("select op_name(?)", [name]).fetchone()[0]

    assert normalise_op("hcom_allReduce__123_0_1") == "hcom_allReduce"
    assert normalise_op("hcom_send__77_2_1") == "hcom_send"
    assert normalise_op("matmul") == "matmul"


def test_runs_keep_one_line_per_run_with_a_long_model_name(tmp_path: Path, capsys) -> None:
    """A model name that would push the row past 120 columns is cut with '…' (the run id stays
    whole, it is what `show` takes); before, rich folded it onto a second line."""
    from pipelines.sim.run import simulate
    from pipelines.sim.writers_ascend import write_ascend_pt

    run = simulate([65536], "cpp", model="qwen3-coder-30b-a3b", chunk_size=16384, pp=2)
    write_ascend_pt(run, tmp_path / "raw" / "qwen3-coder-30b-a3b-cpp-64k-c16k-run-0")
    target = str(tmp_path / "w.duckdb")
    argv = ["ingest", str(tmp_path / "raw"), "--warehouse", target, "--tag", "model=" + "x" * 40]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["runs", "--warehouse", target]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 120
    # the id names the profiler metadata's model, schedule and length (not the tag), and keeps
    # the model's words that fit in 60 characters
    (row,) = [line for line in lines if line.startswith("ascend-pt-qwen3-coder-30b-cpp-64k-")]
    assert "xxxxxxxx…" in row and row.rstrip().endswith("yes")
