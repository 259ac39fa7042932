"""The dashboard site: one page per chart family over the selected runs, an index stating the
selection and the data's freshness, and a page per run. One function, `build_site`, for the
CLI (`tracereplay dashboards`), the demo and Dagster."""

from __future__ import annotations

import html
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import altair as alt
import duckdb
import polars as pl

from dashboards import data
from dashboards.breakdown import breakdown_chart
from dashboards.pages import Section, index_html, png_writer, write_page
from dashboards.replay import replay_chart
from dashboards.schedules import schedule_chart
from dashboards.tau import tau_chart
from dashboards.timeline import timeline_chart
from dashboards.trends import trend_chart
from pipelines.selectors import Selector, parse_selector, require_runs

TREND_METRICS = ("ttft", "bubble", "computing")
BREAKDOWN_MAX_RUNS = 12


@dataclass(frozen=True)
class Page:
    name: str
    path: Path
    what: str
    pngs: tuple[Path, ...]


@dataclass
class SiteReport:
    """What build_site wrote: the index, each page with its PNGs, the runs charted, and the
    families left out because the selection had nothing for them (with why)."""

    out_dir: Path
    index: Path
    selector: str
    run_ids: list[str]
    pages: list[Page] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {
            "out_dir": str(self.out_dir),
            "index": str(self.index),
            "selector": self.selector,
            "runs": len(self.run_ids),
            "pages": [
                {"name": p.name, "path": str(p.path), "pngs": [str(x) for x in p.pngs]}
                for p in self.pages
            ],
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
        }


def _runs(count: int) -> str:
    return f"{count} run" if count == 1 else f"{count} runs"


def _tau_sections(curves: data.TauCurves) -> list[Section]:
    sections = []
    for i, fit in enumerate(curves.fits.to_dicts()):
        band = curves.band.filter(pl.col("curve") == fit["curve"]) if curves.band.height else None
        if band is None or band.is_empty():
            continue
        points = curves.points.filter(pl.col("curve") == fit["curve"])
        heading = f"{fit['curve']}: {fit['verdict']}"
        sections.append(Section(f"tau{i}", heading, tau_chart(points, band, fit)))
    return sections


def _no_tau_why(curves: data.TauCurves) -> str:
    """Why the tau page has no chart, true for the state it is said in: no chunks at all, or
    curves whose fits draw no line (too few chunk indices)."""
    if curves.fits.is_empty():
        return "no run with chunks (run `tracereplay chunks`, or add chunk markers)"
    verdicts = curves.fits["verdict"].value_counts(sort=True).rows()
    counts = ", ".join(f"{verdict} {n}" for verdict, n in verdicts)
    return (
        f"{curves.fits.height} curve(s) of runs with chunks, none with a fitted line to draw"
        f" ({counts}; a line needs several chunk indices per curve: `tracereplay fit` says why"
        " per curve)"
    )


def _breakdown_runs(
    con: duckdb.DuckDBPyConnection,
    run_ids: list[str],
    workload: dict | None,
    limit: int = BREAKDOWN_MAX_RUNS,
) -> tuple[list[str], str]:
    """The runs the breakdown page charts, and what the heading says about the choice. A panel
    per run stops being readable past `limit` runs (the demo's 126 made a PNG 15,883
    px tall); then: the timeline's measured runs (one workload, a run per schedule), else the
    runs with the most ranks."""
    if len(run_ids) <= limit:
        return run_ids, ""
    chosen = [r for r in (workload or {}).get("runs", {}).values() if r in set(run_ids)]
    what = "the timeline's runs"
    if not chosen:
        chosen = [
            r[0]
            for r in con.execute(
                "select run_id from runs where run_id in (select unnest(?::varchar[]))"
                " order by world_size desc nulls last, run_id limit ?",
                [run_ids, limit],
            ).fetchall()
        ]
        what = "the runs with the most ranks"
    return chosen, (
        f" of {len(run_ids)} selected: {what} (narrow the selection, `tracereplay dashboards"
        " SEL`, to chart others)"
    )


def _family_sections(
    con: duckdb.DuckDBPyConnection, run_ids: list[str], change_points: pl.DataFrame | None
) -> Iterator[tuple[str, tuple[str, list[Section] | str]]]:
    """(name, (what it shows, sections, or why there is nothing)) per page, each as soon as it
    is built (the caller writes it, and its PNGs render, while the next is built)."""
    curves = data.tau_curves(con, run_ids)
    tau_sections = _tau_sections(curves)
    yield (
        "tau",
        (
            "τ_k per model, configuration and virtual stage: points over repeats, fit, 95% band",
            tau_sections or _no_tau_why(curves),
        ),
    )
    workload = data.timeline_workload(con, run_ids)
    if workload:
        spans = data.timeline_spans(con, workload["runs"])
        label = data.trend_config(workload) + f" ({workload['source']})"
        cut = spans.filter(pl.col("truncated"))["schedule"].unique().to_list()
        note = "; first spans only for " + ", ".join(cut) if cut else ""
        runs = ", ".join(f"{s}: {r}" for s, r in workload["runs"].items())
        chart = timeline_chart(spans, f"Schedule timelines: {label} (bubbles in red)")
        section = Section("timeline", label, chart, f"runs {runs}{note}")
        yield "timeline", ("schedule timelines of one workload, bubbles in red", [section])
    else:
        yield "timeline", ("schedule timelines", "no run with chunks and a schedule")
    breakdown_ids, which = _breakdown_runs(con, run_ids, workload)
    breakdown = data.rank_breakdown(con, breakdown_ids)
    if breakdown.height:
        sections = [
            Section(
                "ranks",
                _runs(breakdown["run_id"].n_unique()) + which,
                breakdown_chart(breakdown),
                "one preferred breakdown row per rank and step (int_step_breakdown_preferred),"
                " summed over steps; origin in the tooltip",
            )
        ]
        yield (
            "breakdown",
            (
                "step breakdown per rank: computing / exposed comm / recv_wait / free",
                sections,
            ),
        )
    else:
        yield "breakdown", ("step breakdown per rank", "no step breakdown rows")
    summary = data.schedule_summary(con, run_ids)
    yield (
        "schedules",
        (
            "computing / bubble / exposed comm per schedule, mean and 95% t interval over repeats",
            [
                Section(
                    "schedules",
                    "per workload",
                    schedule_chart(summary),
                    "n runs per bar in the tooltip; no interval with one run",
                )
            ]
            if summary.height and summary["schedule"].n_unique() > 1
            else "no workload among the selected runs under two or more schedules",
        ),
    )
    trend_sections = []
    for metric in TREND_METRICS:
        history = data.metric_history(con, run_ids, metric)
        if history.height:
            trend_sections.append(
                Section(
                    metric,
                    metric,
                    trend_chart(history, change_points),
                    "nightly mean, 95% t interval over the night's runs",
                )
            )
    untagged = data.untagged_runs(con, run_ids)
    left_out = (
        f"; {untagged} untagged run(s) (no model fact) left out, a configuration each: tag"
        f" repeats alike to trend them: {data.TAG_HINT}"
        if untagged
        else ""
    )
    if trend_sections and left_out:
        last = trend_sections[-1]
        trend_sections[-1] = Section(last.slug, last.heading, last.chart, last.note + left_out)
    yield (
        "trends",
        (
            "key metrics over the nightly runs, change points marked",
            trend_sections
            or f"no configuration with runs on at least {data.MIN_NIGHTS} nights (collected_at)"
            + left_out,
        ),
    )
    pairs = data.replay_pairs(con, run_ids)
    yield (
        "replay",
        (
            "replay (simulated rerun) vs measured TTFT and bubble, identity line",
            [
                Section(
                    m, m, replay_chart(pairs, m), "measured: mean (min..max) of the measured runs"
                )
                for m in pairs["metric"].unique(maintain_order=True)
            ]
            if pairs.height
            else "no rerun of a selected run with measured runs of its schedule"
            " (tracereplay replay)",
        ),
    )


def _freshness_html(con: duckdb.DuckDBPyConnection, selector: Selector, run_ids: list[str]) -> str:
    fresh = data.freshness(con, run_ids)
    first, last = fresh["first_collected"], fresh["last_collected"]
    if first is None:  # no selected run has a collection time (a lone kernel_details.csv)
        collected = "collection time unknown"
    elif first == last:
        collected = f"collected {first}"
    else:
        collected = f"collected {first} .. {last}"
    return (
        f"<p>Selection: <code>{html.escape(selector.text or '(every measured run)')}</code>, "
        f"{_runs(fresh['runs'])}; {collected}; last ingested {fresh['last_ingested']}; "
        f"pages built {time.strftime('%Y-%m-%d %H:%M:%S')}.</p>"
    )


def build_site(
    con: duckdb.DuckDBPyConnection,
    selector: Selector | str | None,
    out_dir: Path,
    change_points: pl.DataFrame | None = None,
) -> SiteReport:
    """Chart the selected runs into out_dir: <family>.html pages with their PNGs, index.html.
    Raises SelectorError when nothing matches (the message says what exists)."""
    start = time.monotonic()
    if not isinstance(selector, Selector):
        selector = parse_selector(selector)
    run_ids = require_runs(con, selector)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    intro = _freshness_html(con, selector, run_ids)
    report = SiteReport(out_dir, out_dir / "index.html", selector.text, run_ids)
    with png_writer() as writer:  # a page's PNGs render while the next page is built
        for name, (what, content) in _family_sections(con, run_ids, change_points):
            if isinstance(content, str):
                report.skipped[name] = content
                continue
            path = out_dir / f"{name}.html"
            pngs = write_page(path, f"tracereplay · {name}", content, intro, writer)
            report.pages.append(Page(name, path, what, tuple(pngs)))
    links = [(p.name, p.path.name, p.what) for p in report.pages]
    skipped = "".join(
        f"<li>{html.escape(n)}: {html.escape(why)}</li>" for n, why in report.skipped.items()
    )
    index_intro = intro + (f"<p>Not charted:</p><ul>{skipped}</ul>" if skipped else "")
    report.index.write_text(index_html("tracereplay dashboards", index_intro, links), "utf-8")
    report.seconds = time.monotonic() - start
    return report


def run_page(con: duckdb.DuckDBPyConnection, run_id: str, out_dir: Path) -> Path:
    """runs/<run_id>.html: the run's step breakdown per rank, its timeline and its τ_k curves
    (what it has of them), for `tracereplay show RUN --html`."""
    sections: list[Section] = []
    breakdown = data.rank_breakdown(con, [run_id])
    if breakdown.height:
        sections.append(Section("breakdown", "step breakdown per rank", breakdown_chart(breakdown)))
    schedule = con.execute("select schedule from runs where run_id = ?", [run_id]).fetchone()
    spans = data.timeline_spans(con, {(schedule[0] if schedule else None) or "run": run_id})
    if spans.height:
        chart = timeline_chart(spans, f"Timeline of run {run_id} (bubbles in red)")
        sections.append(Section("timeline", "timeline", chart))
    sections += _tau_sections(data.tau_curves(con, [run_id]))
    if not sections:
        sections.append(
            Section(
                "empty",
                "nothing to chart",
                alt.Chart(pl.DataFrame({"x": [0]}))
                .mark_text(text="this run has no step breakdown and no chunks")
                .encode(),
            )
        )
    path = Path(out_dir) / "runs" / f"{run_id}.html"
    root = Path(out_dir)
    intro = _freshness_html(con, Selector(), [run_id])
    # the index link only where OUT is a dashboards site (tracereplay dashboards --out OUT)
    write_page(
        path, f"run {run_id}", sections, intro, root=root, index_link=(root / "index.html").exists()
    )
    return path
