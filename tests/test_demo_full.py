"""The full `tracereplay demo` (126 runs: the five schedules, the top-k bend runs and the nightly
history), once: `tracereplay regressions` on its warehouse reports exactly the injected
regression, the demo's pages open offline in headless Chromium, and `show RUN --html` writes the
run page. The demo takes about 1-2 minutes on a quiet 2-core machine (marked slow)."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import date
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.nightly_history import NightlyHistory
from tests.dashboards.test_browser import CONSOLE_ERROR, MARK_PATH, _chromium, _open

pytestmark = pytest.mark.slow


def _run(argv: list[str]) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(argv)
    return code, buffer.getvalue()


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("demo-full")
    code, text = _run(["demo", "--out", str(out), "--json"])
    report = json.loads(text)
    assert code == 0, (report["check"], report["regressions"], report["data_check"]["ok"])
    return out, report


def test_regressions_on_the_demo_warehouse_report_exactly_the_injected_one(demo) -> None:
    out, report = demo
    expected = NightlyHistory().expected_regression()
    assert expected is not None and report["regressions"]["ok"]
    code, text = _run(["regressions", "--warehouse", str(out / "warehouse.duckdb"), "--json"])
    rows = json.loads(text)
    assert code == 1  # a confirmed regression is reported
    assert rows, "no change point found"
    injected = (expected["model"], expected["schedule"], expected["seq_len"])
    for row in rows:  # nothing in any other configuration, pending or confirmed
        config = row["config"]
        assert (config["model"], config["schedule"], config["seq_len"]) == injected, row
        assert row["status"] == "confirmed" and row["direction"] == "regression", row
        night = (date.fromisoformat(row["collected_after"][:10]) - date(2026, 2, 1)).days
        assert abs(night - expected["night"]) <= 2, row
        # the +5 % compute step, not noise: the interval clears 1 % (throughput moves down)
        assert row["magnitude_lo"] > 0.01 or row["magnitude_hi"] < -0.01, row
    # one change point per metric of that configuration at most: one regression, seen by each
    assert len({row["metric"] for row in rows}) == len(rows)


def test_demo_compares_cpp_with_vpp_and_passes_the_data_check(demo) -> None:
    _, report = demo
    comparison = report["comparison"]
    assert "schedule=cpp" in comparison["baseline"]["selector"]
    assert len(comparison["baseline"]["runs"]) == len(comparison["candidate"]["runs"]) == 3
    ttft = next(m for m in comparison["metrics"] if m["metric"] == "ttft_ns")
    assert ttft["verdict"] == "improved", ttft  # VPP's smaller bubble shortens TTFT
    assert report["data_check"]["ok"]
    schedules = {c["schedule"] for c in report["curves"]}
    assert schedules == {"cpp", "dcpp", "vpp", "vpp_async", "vpp_pack"}


def test_demo_pages_render_offline_in_chromium(demo, tmp_path) -> None:
    _, report = demo
    browser = _chromium()
    site = report["site"]
    index = Path(site["index"])
    dom, log = _open(browser, index, tmp_path / "profile-index")
    pages = {p["name"]: Path(p["path"]) for p in site["pages"]}
    assert {"tau", "timeline", "trends", "schedules"} <= set(pages), site["skipped"]
    assert all(f'href="{p.name}"' in dom for p in pages.values()), dom[:500]
    assert not CONSOLE_ERROR.search(log)
    for name in ("trends", "timeline"):
        dom, log = _open(browser, pages[name], tmp_path / f"profile-{name}")
        assert "<svg" in dom, f"{name}: no SVG rendered"
        assert len(MARK_PATH.findall(dom)) >= 1, f"{name}: no marks drawn"
        assert '<pre class="chart-error"' not in dom
        errors = [line for line in log.splitlines() if CONSOLE_ERROR.search(line)]
        assert not errors, errors


def test_show_html_writes_the_run_page(demo, tmp_path) -> None:
    out, report = demo
    run_id = next(r for r in report["run_ids"] if "-vpp-128k-" in r)
    argv = ["show", run_id, "--warehouse", str(out / "warehouse.duckdb"), "--html", str(tmp_path)]
    code, text = _run([*argv, "--json"])
    page = Path(json.loads(text)["html"])
    assert code == 0 and page == tmp_path / "runs" / f"{run_id}.html"
    html = page.read_text("utf-8")
    # offline: the page loads the site's one shared chart library, never a CDN
    assert "vega" in html and "<script src='../vega-bundle.js'>" in html
    assert "<script src='http" not in html and '<script src="http' not in html
    assert (tmp_path / "vega-bundle.js").stat().st_size > 100_000
    assert "step breakdown per rank" in html and "timeline" in html
