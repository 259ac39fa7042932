"""Runs without a model fact (untagged real data) are each a curve of their own: never pooled with
each other, never printed as `None` (issue 35 item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.cli import main

pytestmark = pytest.mark.real

SETS = ("text/level1", "text/level0")  # two real Ascend exports, same hardware, no model fact


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
