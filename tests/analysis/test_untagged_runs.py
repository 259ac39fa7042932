"""Runs without a model fact (untagged real data) are each a curve of their own: never pooled with
each other, never printed as `None` (issue 35 item 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main

pytestmark = pytest.mark.real

SETS = ("text/level1", "text/level0")  # two real Ascend exports, same hardware, no model fact


@pytest.mark.slow  # a long end-to-end test (CI runs it: .ci/run)
def test_untagged_runs_are_fitted_one_curve_each(real_dir: Path, tmp_path: Path, capsys) -> None:
    target = str(tmp_path / "w.duckdb")
    base = real_dir / "msinsight/test/data/pytorch"
    assert main(["ingest", *(str(base / s) for s in SETS), "--warehouse", target]) == 0
    assert main(["chunks", "--profiler-steps", "--warehouse", target]) == 0
    capsys.readouterr()
    assert main(["fit", "--warehouse", target, "--json"]) == 0
    curves = json.loads(capsys.readouterr().out)["curves"]
    models = sorted({c["model"] for c in curves})
    assert len(models) == 2 and all(m.startswith("(untagged) ") for m in models)
    assert all(c["n_runs"] == 1 for c in curves)  # before: one curve pooling both exports
    assert main(["fit", "--warehouse", target]) == 0
    text = capsys.readouterr().out
    assert "None" not in text and "2 untagged runs" in text and "--tag model=" in text
    # following the hint (chunks --profiler-steps) leaves the data check green: ProfilerStep
    # chunks carry no token counts by construction (positive_prompt_tokens allows it there)
    assert main(["check", "--warehouse", target]) == 0
    # the facts_for_chunks warning names the missing facts, never as 'null'
    report = capsys.readouterr().out
    assert "model=(missing)" in report and not NO_VALUE.search(report)


def test_the_untagged_rule_is_one_relation_read_by_the_tau_points_and_the_fit_inputs() -> None:
    """'(untagged) ' || run_id is written once (sql/staging/stg_run_configuration.sql); the tau_k
    points (int_chunk_tau) and the fit inputs read that relation instead of writing it again."""
    from pipelines.paths import SQL_DIR
    from pipelines.store.relations import project_relations

    rule = "'(untagged) ' || run_id"
    holders = [
        p.relative_to(SQL_DIR).as_posix() for p in SQL_DIR.rglob("*.sql") if rule in p.read_text()
    ]
    assert holders == ["staging/stg_run_configuration.sql"]
    queries_py = Path(__file__).parents[2] / "pipelines/store/queries.py"
    assert "coalesce(model" not in queries_py.read_text()
    relations = project_relations()[0]
    assert "stg_run_configuration" in relations["int_chunk_tau"].depends_on


def test_every_untagged_real_run_has_a_label_from_what_is_known(
    real_dir: Path, tmp_path: Path
) -> None:
    """The configuration label of an untagged run names its reader, its accelerator when known and
    the stem of its path; never None, and two runs of different readers never share one."""
    import duckdb

    target = tmp_path / "w.duckdb"
    base = real_dir / "msinsight/test/data/pytorch"
    kineto = real_dir / "kineto/HolisticTraceAnalysis/tests/data/critical_path/simple_add"
    assert (
        main(
            [
                "ingest",
                str(base / "text/level0"),
                str(base / "db/level1"),
                str(kineto),
                "--warehouse",
                str(target),
            ]
        )
        == 0
    )
    con = duckdb.connect(str(target), read_only=True)
    rows = dict(
        con.execute("select source, configuration_label from stg_run_configuration").fetchall()
    )
    con.close()
    assert rows == {
        "ascend_pt": "(untagged) ascend text level0",
        "ascend_pt_db": "(untagged) ascend db Ascend910B level1",
        "kineto": "(untagged) kineto NVIDIA A100-PG509-200 simple_add",
    }


NO_VALUE = re.compile(r"\b(None|null|nan|NaN)\b")


def _page_text(path: Path) -> str:
    """What a page shows: its HTML without the inline chart specs (JSON, where `null` is how
    Vega-Lite says 'no title' and 'no interval')."""
    return re.sub(r"<script>.*?</script>", "", path.read_text(), flags=re.S)


def test_schedules_and_dashboards_of_real_untagged_runs(
    real_dir: Path, tmp_path: Path, capfd
) -> None:
    """Three real Ascend exports tagged with schedules but no model, then two of them tagged
    model=cnn (the text exports: cpp and vpp; the db export: cpp on a named Ascend910B):
    no None / null / nan in the output or the pages, the untagged runs counted with the --tag
    command, runs of different readers never compared or set side by side, the replay of
    ProfilerStep chunks (no token counts) refused in one line instead of LAPACK's 'illegal
    value' lines, and no polars warning."""
    target = str(tmp_path / "w.duckdb")
    base = real_dir / "msinsight/test/data/pytorch"
    tagged = [("text/level0", "cpp"), ("text/level1", "vpp"), ("db/level1", "cpp")]
    for folder, schedule in tagged:
        args = ["ingest", str(base / folder), "--tag", f"schedule={schedule}"]
        assert main([*args, "--warehouse", target]) == 0
    assert main(["chunks", "--profiler-steps", "--warehouse", target]) == 0
    capfd.readouterr()
    assert main(["schedules", "--warehouse", target]) == 0
    out, err = capfd.readouterr()
    assert not NO_VALUE.search(out + err) and "illegal value" not in out + err
    assert "3 untagged run(s) (no model fact) left out" in out and "--tag model=" in out
    for folder, schedule in tagged:
        args = ["ingest", str(base / folder), "--tag", "model=cnn", "--tag", f"schedule={schedule}"]
        assert main([*args, "--warehouse", target]) == 0
    capfd.readouterr()
    assert main(["schedules", "--warehouse", target]) == 0
    out, err = capfd.readouterr()
    assert not NO_VALUE.search(out + err) and "illegal value" not in out + err
    # the two text exports are one workload; the db export (another reader) is not in it
    assert (
        "cnn (ascend_pt): runs cpp 1, vpp 1" in out
        and "(Ascend910B, ascend_pt_db): one schedule only" in out
    )
    assert "carry no token counts (ProfilerStep windows), nothing to replay" in out
    site = tmp_path / "site"
    assert main(["dashboards", "--warehouse", target, "--out", str(site)]) == 0
    out, err = capfd.readouterr()
    assert not NO_VALUE.search(out) and "Warning" not in err, err
    timeline = (site / "timeline.html").read_text()
    assert "db-level1" not in timeline  # the db export beside the text export before
    assert "cnn (ascend_pt)" in timeline and "seq None" not in timeline
    assert '"workload": "cnn (ascend_pt)"' in (site / "schedules.html").read_text()
    for page in site.glob("*.html"):
        assert not NO_VALUE.search(_page_text(page)), page


def test_explain_hint_after_profiler_steps_found_nothing(
    real_dir: Path, tmp_path: Path, capsys
) -> None:
    """Two real kernel-level exports (msprof-analyze fixtures) without ProfilerStep ranges: after
    `chunks --profiler-steps` (which cut nothing), explain no longer suggests that command
    (before: it did)."""
    target = str(tmp_path / "w.duckdb")
    sets = [
        "msprof-analyze/test/ut/advisor/advisor_backend/compute_advice",
        "msprof-analyze/test/ut/advisor/compute_advice/data",
    ]
    # exit 2: compute_advice/data's kernel_details.csv repeats one line 4 times, and its three
    # copies are set aside as duplicate_row (docs/ingest_rules.md); both runs load
    assert main(["ingest", *(str(real_dir / s) for s in sets), "--warehouse", target]) == 2
    assert "duplicate_row" in capsys.readouterr().err
    assert main(["chunks", "--profiler-steps", "--warehouse", target]) == 0
    capsys.readouterr()
    assert main(["explain", "source=ascend_pt", "source=ascend_pt", "--warehouse", target]) == 0
    out = capsys.readouterr().out
    assert "neither chunk markers nor ProfilerStep ranges" in out
    assert "treat each ProfilerStep as one chunk" not in out


def test_show_of_profiler_step_chunks_and_its_page_links(
    real_dir: Path, tmp_path: Path, capsys
) -> None:
    """`show` of a real export cut by ProfilerStep: no stage -1 or R² nan printed; its page reads
    the site's one chart library and links to an index only where there is one (before: a
    broken 'index' link to runs/index.html and a 0.9 MB library inline in the page)."""
    target = str(tmp_path / "w.duckdb")
    level1 = real_dir / "msinsight/test/data/pytorch/text/level1"
    assert main(["ingest", str(level1), "--warehouse", target]) == 0
    assert main(["chunks", "--profiler-steps", "--warehouse", target]) == 0
    capsys.readouterr()
    con = duckdb.connect(target, read_only=True)
    (run_id,) = con.execute("select run_id from runs").fetchone()
    con.close()
    alone = tmp_path / "alone"
    assert main(["show", run_id, "--warehouse", target, "--html", str(alone)]) == 0
    out = capsys.readouterr().out
    assert not NO_VALUE.search(out) and " -1 " not in out and "too_short" in out
    page = (alone / "runs" / f"{run_id}.html").read_text()
    assert "index</a>" not in page and "src='../vega-bundle.js'" in page
    assert (alone / "vega-bundle.js").stat().st_size > 500_000 and len(page) < 200_000
    site = tmp_path / "site"
    assert main(["dashboards", "--warehouse", target, "--out", str(site)]) == 0
    assert main(["show", run_id, "--warehouse", target, "--html", str(site)]) == 0
    page = (site / "runs" / f"{run_id}.html").read_text()
    assert "<a href='../index.html'>index</a>" in page and (site / "index.html").exists()
