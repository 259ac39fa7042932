"""Every figure `tracereplay show` and `runs` print for the real sets, against the standard-
library oracle tests/analysis/show_oracle.py reading the raw exports: per-kernel-name launches,
total and longest time; per comm op count, total and wait; the profiler's and msprof-analyze's
step breakdown rows as show sums them; the run's makespan; show's top-10 lists.
(tests/test_run_views.py checks show against the warehouse; this checks both against the files.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.analysis.runs.run_views import run_list, show_run
from pipelines.ingest.load import ingest_paths
from pipelines.store import open_store, queries
from tests.analysis import show_oracle as oracle

REAL_SETS = (
    "msinsight/test/st/level2",
    "msinsight/test/data/pytorch/text/level0",
    "msinsight/test/data/pytorch/text/level1",
    "msinsight/test/data/pytorch/db/level1",
    "msinsight/server/src/test/test_data",
    "msprof-analyze/test/ut/advisor",
    "kineto",
)
CLUSTER_CSV = (
    "msinsight/server/src/test/test_data/cluster_analysis_output/cluster_step_trace_time.csv"
)
EVERYTHING = 10**6


@pytest.fixture(scope="module")
def real_runs(real_dir: Path, tmp_path_factory) -> list[tuple]:
    """(run_id, source, {rank: oracle figures}, RunView, runs row, all kernel and comm totals)
    of every run of the real sets."""
    target = tmp_path_factory.mktemp("show-figures") / "w.duckdb"
    con = open_store(target).open()
    try:
        ingest_paths([real_dir / p for p in REAL_SETS], con, progress=False)
        out = []
        for run_id, source in con.execute(
            "select run_id, source from runs order by run_id"
        ).fetchall():
            ranks = con.execute(
                "select rank, source_path from ranks where run_id = ? and source_path is not null",
                [run_id],
            ).fetchall()
            figures = {}
            for rank, path in ranks:
                path = Path(path)
                if source == "kineto":
                    figures[rank] = oracle.kineto_file(path)
                elif source == "ascend_pt_db":
                    figures[rank] = oracle.db_rank(path)
                else:
                    figures[rank] = oracle.text_rank(path)
            kernels = queries.top_kernels(con, run_id, EVERYTHING)
            comm = queries.top_comm_ops(con, run_id, EVERYTHING)
            (row,) = run_list(con, [run_id]).to_dicts()
            view = show_run(con, run_id, fit=False)
            out.append((run_id, source, figures, view, row, kernels, comm))
    finally:
        con.close()
    assert len(out) == 10
    return out


def test_kernel_totals_per_name(real_runs) -> None:
    """Launches, total and longest time and ranks of every compute kernel name (5,050 set A
    rows, 591 of msprof-analyze's compute_advice, the db's TASK rows, the Kineto kernels)."""
    for run_id, _source, figures, view, _row, kernels, _comm in real_runs:
        expected = oracle.run_totals(figures)["kernels"]
        ours = {
            r["name"]: [r["count"], r["total_ns"], r["max_ns"], r["ranks"]]
            for r in kernels.to_dicts()
        }
        assert ours == expected, run_id
        top = sorted(expected.items(), key=lambda kv: (-kv[1][1], kv[0]))[:10]
        shown = [(r["name"], r["count"], r["total_ns"]) for r in view.kernels.to_dicts()]
        assert shown == [(n, v[0], v[1]) for n, v in top], run_id


def test_comm_op_totals(real_runs) -> None:
    """Count, total and wait of every communication op name, summed over ranks: trace HCCL
    lanes or kernel_details rows, waits from communication.json / analysis.db (Kineto: no wait,
    left out)."""
    for run_id, source, figures, view, _row, _kernels, comm in real_runs:
        expected = oracle.run_totals(figures)["comm"]
        ours = {
            r["op"]: [r["count"], r["total_ns"], r["wait_ns"], r["ranks"]] for r in comm.to_dicts()
        }
        if source == "kineto":
            assert all(v[2] is None for v in ours.values()), run_id
            expected = {k: [c, t, None, n] for k, (c, t, _w, n) in expected.items()}
        assert ours == expected, run_id
        assert len(view.comm) == min(10, len(expected))


def test_makespan(real_runs) -> None:
    """`runs`' makespan: first start to last end over the run's events (kernel rows where no
    trace)."""
    for run_id, _source, figures, _view, row, _kernels, _comm in real_runs:
        assert row["makespan_ns"] == oracle.run_totals(figures)["makespan"], run_id


def test_profiler_and_cluster_rows_as_show_sums_them(real_runs, real_dir: Path) -> None:
    """Show's breakdown of a rank from the profiler equals its step_trace_time.csv /
    StepTraceTime rows summed over steps; a rank from the cluster summary (set D's ranks 2-15)
    equals msprof-analyze's cluster_step_trace_time.csv row; to the ns."""
    cluster = oracle.cluster_rows(real_dir / CLUSTER_CSV)
    checked = {"profiler": 0, "cluster": 0}
    for run_id, _source, figures, view, _row, _kernels, _comm in real_runs:
        for shown in view.breakdown.to_dicts():
            rank, origin = shown["rank"], shown["origin"]
            if origin == "profiler":
                rows = figures[rank]["step_trace"]
                expected = {k: sum(r[k] for r in rows) for k in oracle.STEP_COLUMNS}
            elif origin == "cluster":
                expected = cluster[rank]
            else:
                continue
            assert {k: shown[k] for k in oracle.STEP_COLUMNS} == expected, (run_id, rank)
            checked[origin] += 1
    # A 4 ranks, B0 / B1 / C 2 each, D's ranks 0-1 from the profiler and 2-15 from the cluster
    assert checked == {"profiler": 12, "cluster": 14}


FETCHED = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.slow
def test_fetched_kineto_traces(tmp_path: Path) -> None:
    """The same figures on the 19 fetched public Kineto traces (HTA, PyTorch Kineto samples,
    TraceLens; tests/data/real_kineto and real_engines, git-ignored: skips without them): kernel
    and comm totals (a SendRecv kernel is p2p or collective by its host range, so a name may
    have two rows: summed here), makespan (HTA's ns_resolution_trace: epoch µs with decimals)."""
    roots = [FETCHED / "real_kineto", FETCHED / "real_engines"]
    traces = sorted(p for root in roots if root.is_dir() for p in root.rglob("*.json*"))
    traces = [p for p in traces if not p.name.endswith(".figures.json")]
    if len(traces) < 19:
        pytest.skip("the fetched Kineto traces are not here (tests/data/real_kineto/SOURCES.md)")
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        ingest_paths(roots, con, progress=False)
        runs = con.execute("select run_id from runs order by run_id").fetchall()
        assert len(runs) == 19
        for (run_id,) in runs:
            (path,) = con.execute(
                "select source_path from ranks where run_id = ?", [run_id]
            ).fetchone()
            expected = oracle.run_totals({0: oracle.kineto_file(Path(path))})
            kernels = queries.top_kernels(con, run_id, EVERYTHING).to_dicts()
            ours = {
                r["name"]: [r["count"], r["total_ns"], r["max_ns"], r["ranks"]] for r in kernels
            }
            assert ours == expected["kernels"], run_id
            comm: dict[str, list[int]] = {}
            for r in queries.top_comm_ops(con, run_id, EVERYTHING).to_dicts():
                total = comm.setdefault(r["op"], [0, 0])
                total[0] += r["count"]
                total[1] += r["total_ns"]
            assert comm == {k: v[:2] for k, v in expected["comm"].items()}, run_id
            (row,) = run_list(con, [run_id]).to_dicts()
            assert row["makespan_ns"] == expected["makespan"], run_id
    finally:
        con.close()
