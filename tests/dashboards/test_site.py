"""The site from a simulated warehouse and the real 16-rank cluster set: pages, PNGs, offline
HTML, the CLI, and the aggregates the charts read."""

from __future__ import annotations

import contextlib
import io
import json
import re

import polars as pl
import pytest

from dashboards import data
from dashboards.pages import BUNDLE_FILE
from pipelines.cli import main
from pipelines.store import open_store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# a script, stylesheet or import fetched from the network
REMOTE = re.compile(
    r"<script[^>]+src=['\"]?https?:|<link[^>]+href=['\"]?https?:|@import\s+url\(['\"]?https?:"
    r"|import\s*\(?['\"]https?:",
    re.IGNORECASE,
)


@pytest.mark.slow
def test_site_pages_pngs_and_offline_html(demo_site) -> None:
    names = {p.name for p in demo_site.pages}
    # --quick is CPP only, so no schedule comparison; the replays give timeline and replay pages;
    # its runs are collected on one night, so no configuration has a trend
    assert {"tau", "timeline", "breakdown", "replay"} <= names
    assert "schedules" in demo_site.skipped and "nights" in demo_site.skipped["trends"]
    bundle = demo_site.out_dir / BUNDLE_FILE
    assert bundle.stat().st_size > 500_000  # the chart library, once per site
    for page in demo_site.pages:
        text = page.path.read_text()
        # each page reads the site's one copy (before: a 0.9 MB copy inline in every page)
        assert f"<script src='{BUNDLE_FILE}'>" in text and len(text) < 200_000, page.path
        assert "vegaEmbed" in text and "<a href='index.html'>index</a>" in text
        assert not REMOTE.search(text), page.path
        assert page.pngs and all(p.read_bytes().startswith(PNG_MAGIC) for p in page.pngs)
    index = demo_site.index.read_text()
    assert all(f"href='{p.path.name}'" in index for p in demo_site.pages)
    assert "Selection:" in index and "last ingested" in index and "9 runs" in index


@pytest.mark.slow
def test_timeline_uses_one_workload_under_every_schedule(demo_warehouse) -> None:
    from pipelines.selectors import select_run_ids

    con = open_store(demo_warehouse).open(read_only=True)
    try:
        workload = data.timeline_workload(con, select_run_ids(con, None))
        spans = data.timeline_spans(con, workload["runs"])
    finally:
        con.close()
    assert set(workload["runs"]) == {"cpp", "vpp", "vpp_pack"}
    chunks = spans.filter(pl.col("kind") == "chunk")
    # a 128K prompt in 16K chunks: 8 chunks on each of the 2 (cpp) or 4 (vpp) virtual stages
    assert chunks.group_by("schedule").len().sort("schedule")["len"].to_list() == [16, 32, 32]
    bubbles = spans.filter(pl.col("kind") == "bubble")
    assert bubbles.height and (bubbles["dur_ms"] > 0).all()
    assert spans.height <= data.MAX_CHART_ROWS


@pytest.mark.slow
def test_breakdown_of_many_runs_charts_the_timelines_runs(demo_warehouse) -> None:
    from dashboards.site import _breakdown_runs
    from pipelines.selectors import select_run_ids

    con = open_store(demo_warehouse).open(read_only=True)
    try:
        ids = select_run_ids(con, None)
        workload = data.timeline_workload(con, ids)
        assert _breakdown_runs(con, ids, workload) == (ids, "")  # 9 runs: every one
        chosen, why = _breakdown_runs(con, ids, workload, limit=3)
        by_ranks, _ = _breakdown_runs(con, ids, None, limit=3)
    finally:
        con.close()
    # the quick demo's timeline: its one measured cpp run beside the reruns
    assert chosen == [workload["runs"]["cpp"]] and "of 9 selected: the timeline's runs" in why
    assert len(by_ranks) == 3 and by_ranks == sorted(by_ranks)  # 2 ranks each: by id


@pytest.mark.slow
def test_cli_json_and_selector_miss(demo_warehouse, tmp_path) -> None:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(
            [
                "dashboards",
                "model=glm-5.2",
                "--warehouse",
                str(demo_warehouse),
                "--out",
                str(tmp_path),
                "--json",
            ]
        )
    assert code == 0
    report = json.loads(buffer.getvalue())
    assert report["runs"] == 3 and (tmp_path / "index.html").exists()
    with contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(
            ["dashboards", "model=nope", "--warehouse", str(demo_warehouse), "--out", str(tmp_path)]
        )
    assert code == 2 and "glm-5.2" in err.getvalue()


@pytest.mark.real
def test_sixteen_rank_breakdown_from_the_cluster_summary(real_dir, tmp_path) -> None:
    """msinsight test_data (a 16-rank job with cluster_analysis_output): ranks 8-15 carry the
    178-195 ms receive bubble; ranks 0-7 none; the parts add up to the step window."""
    from pipelines.ingest.load import ingest_paths

    target = real_dir / "msinsight" / "server" / "src" / "test" / "test_data"
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        ingest_paths([target], con, progress=False)
        run_id = con.execute("select run_id from runs where world_size = 16").fetchone()[0]
        frame = data.rank_breakdown(con, [run_id])
    finally:
        con.close()
    wide = frame.pivot("part", index=["rank", "window_ms"], values="ms").sort("rank")
    assert wide["rank"].to_list() == list(range(16))
    assert (wide.filter(pl.col("rank") < 8)["recv_wait"] == 0).all()
    late = wide.filter(pl.col("rank") >= 8)["recv_wait"]
    assert late.min() > 178 and late.max() < 196
    total = wide["computing"] + wide["exposed_comm"] + wide["recv_wait"] + wide["free"]
    assert ((total - wide["window_ms"]).abs() < 0.001).all()
