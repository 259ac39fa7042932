"""`tracereplay check` on the quick demo warehouse: clean it exits 0; each corruption the nightly
job must catch makes it exit 1 and name the table, the expectation and example rows."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from pipelines.quality.check_catalog import EXPECTATIONS, expectation


@pytest.fixture(scope="session")
def demo_warehouse(quick_demo_warehouse: Path) -> Path:
    """The session's quick demo warehouse (tests/conftest.py), shared, never changed in place."""
    return quick_demo_warehouse


def _copy(demo_warehouse: Path, tmp_path: Path) -> Path:
    target = tmp_path / "warehouse.duckdb"
    shutil.copy(demo_warehouse, target)
    return target


CORRUPTIONS = {
    "negative_slice_durations": (
        [
            "update slices set dur_ns = -dur_ns where rowid in"
            " (select rowid from slices where dur_ns > 0 order by run_id, start_ns limit 3)"
        ],
        "slices",
        "non_negative_durations",
    ),
    "missing_pp_rank": (
        [
            "delete from ranks where rank = 1 and run_id ="
            " (select min(run_id) from ranks where groups like '%\"pp\"%')"
        ],
        "ranks",
        "pp_groups_complete",
    ),
    "shuffled_chunk_index": (
        [
            "create temp table one as select run_id, rank, vstage, request_id from chunks"
            " order by run_id, rank, vstage, request_id limit 1",
            "update chunks set chunk_idx = case chunk_idx when 0 then 1 else 0 end"
            " where chunk_idx in (0, 1) and (run_id, rank, vstage, request_id) in"
            " (select (run_id, rank, vstage, request_id) from one)",
        ],
        "chunks",
        "indices_in_time_order",
    ),
    "ms_us_mixup_in_kernels": (
        [
            "update kernels set dur_ns = dur_ns * 1000 where run_id ="
            " (select min(run_id) from kernels)"
        ],
        "kernels",
        "shorter_than_a_minute",
    ),
    "duplicated_event": (
        ["insert into slices select * from slices order by run_id, start_ns limit 1"],
        "slices",
        "no_duplicated_events",
    ),
}


def test_clean_demo_warehouse_passes(demo_warehouse, tmp_path, capsys) -> None:
    junit, site = tmp_path / "check.xml", tmp_path / "check-html"
    code = main(
        ["check", "--warehouse", str(demo_warehouse), "--junit", str(junit), "--html", str(site)]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 errors" in out
    assert max(len(line) for line in out.splitlines()) <= 120
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert len(cases) == len(EXPECTATIONS)
    assert {(c.get("classname").rsplit(".", 1)[1], c.get("name")) for c in cases} == {
        (e.table, e.name) for e in EXPECTATIONS
    }
    assert not ET.parse(junit).getroot().findall(".//failure")
    assert (site / "index.html").read_text().startswith("<!DOCTYPE html>")
    pages = sorted(site.rglob("*.html"))
    # GX's Data Docs: a validation page per suite (and batch), a page per suite file
    assert {p.stem for p in (site / "validations").glob("*.html")} >= {
        "slices",
        "kernels",
        "custom_sql_and_schema",
    }
    assert (site / "expectations" / "step_breakdown.html").is_file()
    assert "Great Expectations" in (site / "validations" / "slices.html").read_text()
    for page in pages:  # offline: nothing fetched, nothing run
        text = page.read_text()
        found = re.search(r"https?:|//[a-z0-9]|<script|<link|@import|url\(", text, re.IGNORECASE)
        assert not found, f"{page.name}: {found.group(0) if found else ''}"


# one corruption in the default run; the other four (a check run each) in CI's slow pass
FAST_CORRUPTION = "duplicated_event"


@pytest.mark.parametrize(
    "case",
    [
        case if case == FAST_CORRUPTION else pytest.param(case, marks=pytest.mark.slow)
        for case in sorted(CORRUPTIONS)
    ],
)
def test_corruption_fails_the_check(demo_warehouse, tmp_path, capsys, case) -> None:
    statements, table, name = CORRUPTIONS[case]
    target = _copy(demo_warehouse, tmp_path)
    con = duckdb.connect(str(target))
    for statement in statements:
        con.execute(statement)
    con.close()
    junit = tmp_path / "check.xml"
    code = main(["check", "--warehouse", str(target), "--junit", str(junit)])
    out = capsys.readouterr().out
    assert code == 1, out
    row = next(line for line in out.splitlines() if line.split()[:2] == [table, name])
    kind = expectation(f"{table}.{name}").kind.value
    assert row.split()[2:5] == [kind, "error", "FAIL"]
    detail = out.split(f"{table}.{name} (error, ", 1)[1].splitlines()
    assert detail[1].strip().startswith("run_id="), "example rows follow the failing expectation"
    failures = ET.parse(junit).getroot().findall(".//testcase/failure/..")
    assert name in {c.get("name") for c in failures if c.get("classname").endswith(table)}


@pytest.mark.slow  # a failing check with GX Data Docs (CI runs it: .ci/run)
def test_html_report_names_failing_rows(demo_warehouse, tmp_path, capsys) -> None:
    target = _copy(demo_warehouse, tmp_path)
    con = duckdb.connect(str(target))
    con.execute(CORRUPTIONS["negative_slice_durations"][0][0])
    con.close()
    site = tmp_path / "check-html"
    assert main(["check", "--warehouse", str(target), "--html", str(site), "--json"]) == 1
    capsys.readouterr()
    text = (site / "index.html").read_text()
    assert "slices.non_negative_durations (error): 3 rows" in text
    assert not re.search(r"https?:", text)
    # GX's own page of the suite shows the failure: the rule and the unexpected values
    gx_page = (site / "validations" / "slices.html").read_text()
    assert "3 unexpected values found" in gx_page
    assert "values must be greater than or equal to" in gx_page


def test_bad_selector_exits_2(demo_warehouse, capsys) -> None:
    assert main(["check", "model=no-such-model", "--warehouse", str(demo_warehouse)]) == 2
    assert "no run matches" in capsys.readouterr().err


def test_selector_checks_the_selected_runs(demo_warehouse, capsys) -> None:
    assert main(["check", "model=glm-5.2", "--warehouse", str(demo_warehouse), "--json"]) == 0
    assert '"runs_checked": 3' in capsys.readouterr().out
