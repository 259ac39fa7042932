"""The demo: the whole chain on a simulated campaign, from profiler output to dashboards.

The campaign (pipelines.campaign: the three paper presets x CPP, DCPP, VPP, VPP-Async, VPP-pack
x sequence lengths x repeats, 3 % lognormal noise, one seed per run, and a nightly history with
one injected regression, pipelines.nightly_history) is written as torch_npu text exports under
`<out>/raw/` exactly as the Dagster asset `sim_campaign` writes it, and goes through the same path
as real traces: `ingest_paths` reads the folders into the warehouse, `extract_chunks` segments
them by their chunk markers, `fit_and_store` fits tau_k per configuration and virtual stage and
stores `tau_fits`. The self-check is the verdict policy (pipelines.analysis.tau.verdict_policy) the
Dagster checks apply: dense-attention curves are not flagged, sparse-attention (DSA) curves are
not linear; the demo also requires each kind to be decided at least once, since its campaign
holds both. Then the library functions behind the other commands run on the same warehouse:
`compare_run_sets` (`tracereplay compare`) on one workload's CPP vs VPP runs, `find_changes`
(`tracereplay regressions`) over the nightly history, whose outcome is checked against the
injected regression, `run_checks` (`tracereplay check`), one run replayed under other schedules
(`replay_run`, `tracereplay replay`) and `build_site` (`tracereplay dashboards`) into <out>/site/.

Everything is deterministic (seeds derive from each run's coordinates, trace timestamps from a
fixed epoch), so re-running the demo rewrites the same bytes, which ingest under the same run
ids: no rows are added.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from pipelines import paths
from pipelines.analysis.tau.verdict_policy import ExpectationResult, check_fits
from pipelines.campaign import Campaign, write_campaign

WAREHOUSE_NAME = "warehouse.duckdb"


@dataclass(frozen=True)
class DemoConfig:
    """Where the demo writes, its campaign (pipelines.campaign.Campaign defaults: 36 runs) and
    the schedules the replay compares."""

    out: Path = field(default_factory=paths.demo_dir)  # data/demo under the project root
    warehouse: Path | None = None  # default <out>/warehouse.duckdb
    campaign: Campaign = field(default_factory=Campaign)
    replay_schedules: tuple[str, ...] = ("cpp", "vpp", "vpp_pack")
    compare_baseline: str = "model=deepseek-v3.1,seq_len=131072,schedule=cpp"
    compare_candidate: str = "model=deepseek-v3.1,seq_len=131072,schedule=vpp"
    site: Path | None = None  # default <out>/site
    dashboards: bool = True

    @property
    def warehouse_path(self) -> Path:
        return self.warehouse or self.out / WAREHOUSE_NAME

    @property
    def raw_dir(self) -> Path:
        return self.out / "raw"

    @property
    def site_dir(self) -> Path:
        return self.site or self.out / "site"

    def quick(self) -> DemoConfig:
        """The smallest campaign that still tests the verdicts (Campaign.quick)."""
        return replace(self, campaign=self.campaign.quick())


@dataclass
class CurveCheck:
    """The demo's self-check: the verdict policy's expectations over the campaign's curves."""

    results: list[ExpectationResult] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        out = []
        for result in self.results:
            e = result.expectation
            for curve in result.offending.iter_rows(named=True):
                out.append(
                    f"{e.name}: {curve['model']} {curve['schedule']} s{curve['seq_len']} "
                    f"vs{curve['vstage']}: {curve['verdict']} {curve['magnitude']}".rstrip()
                )
            if result.decided == 0:
                out.append(f"{e.name}: no decided curve of runs with {e.attention} attention")
        return out

    @property
    def ok(self) -> bool:
        return bool(self.results) and not self.failures

    def summary(self) -> str:
        status = "passed" if self.ok else "FAILED"
        parts = "; ".join(r.description() for r in self.results)
        return f"Self-check {status} (verdict policy): {parts}."

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "expectations": {
                r.expectation.name: {
                    "attention": r.expectation.attention,
                    "wants": r.expectation.wants,
                    "passed": r.passed,
                    "covered": r.covered.height,
                    "decided": r.decided,
                    "offending": r.offending.height,
                    "inconclusive": r.inconclusive.height,
                }
                for r in self.results
            },
            "failures": self.failures,
        }


@dataclass
class DemoReport:
    """Everything the demo did and found."""

    config: DemoConfig
    run_ids: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    chunks: int = 0
    unassigned_fraction_max: float = 0.0
    curves: pl.DataFrame | None = None
    check: CurveCheck = field(default_factory=CurveCheck)
    replay: Any = None  # pipelines.replay.store.ReplayReport
    comparison: Any = None  # pipelines.analysis.comparison.run_sets.RunSetComparison
    comparison_skipped: str | None = None
    regressions: RegressionCheck | None = None
    quality: Any = None  # pipelines.quality.checks.CheckReport
    site: Any = None  # dashboards.site.SiteReport
    timings: dict[str, float] = field(default_factory=dict)
    rows_before: dict[str, int] = field(default_factory=dict)
    rows_after: dict[str, int] = field(default_factory=dict)


@dataclass
class RegressionCheck:
    """`find_changes` over the campaign's runs, judged against the nightly history's injected
    regression: ok when every confirmed regression is in the injected configuration within
    +-2 nights of the injected night and there is at least one (none when nothing is injected)."""

    changes: list[Any]  # pipelines.analysis.changes.history.HistoryChange
    series: int
    expected: dict[str, Any] | None
    first_night: str

    def _night(self, collected: str) -> int:
        from datetime import date

        return (date.fromisoformat(collected[:10]) - date.fromisoformat(self.first_night)).days

    def _is_expected(self, change: Any) -> bool:
        e = self.expected
        if e is None:
            return False
        config = change.config
        same = (config["model"], config["schedule"], config["seq_len"]) == (
            e["model"],
            e["schedule"],
            e["seq_len"],
        )
        return same and abs(self._night(change.collected_after) - int(e["night"])) <= 2

    @property
    def regressions(self) -> list[Any]:
        return [c for c in self.changes if c.is_regression]

    @property
    def unexpected(self) -> list[Any]:
        return [c for c in self.regressions if not self._is_expected(c)]

    @property
    def ok(self) -> bool:
        found = [c for c in self.regressions if self._is_expected(c)]
        return not self.unexpected and (bool(found) == (self.expected is not None))

    def summary(self) -> str:
        e = self.expected
        injected = (
            f"injected: {e['model']} {e['schedule']} {e['seq_len']} +{e['slowdown']:.0%} compute "
            f"from {e['date']}"
            if e
            else "nothing injected"
        )
        spans: dict[tuple[str, str, str], tuple[str, str]] = {}
        for c in self.regressions:  # the metrics of one change: the widest 95 % set of its date
            key = (c.config["model"], c.config["schedule"], c.collected_after[:10])
            lo, hi = spans.get(key, (c.earliest_after_at, c.latest_after_at))
            spans[key] = (min(lo, c.earliest_after_at), max(hi, c.latest_after_at))
        where = (
            "; ".join(
                f"{m} {s} from {d}, 95 % set {lo[5:10]} … {hi[5:10]}"
                for (m, s, d), (lo, hi) in sorted(spans.items())
            )
            or "none"
        )
        status = "as expected" if self.ok else "NOT as expected"
        return (
            f"Regressions {status}: {len(self.regressions)} confirmed regression change point(s) "
            f"in {self.series} series ({where}); {injected}."
        )


def check_curves(curves: pl.DataFrame) -> CurveCheck:
    """The verdict policy (pipelines.analysis.tau.verdict_policy.check_fits: fixed-chunk
    schedules)."""
    return CurveCheck(check_fits(curves))


Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def simulate_campaign(config: DemoConfig, log: Log = _stderr) -> list[Path]:
    """Write the campaign into <out>/raw/ (pipelines.campaign.write_campaign); the run folders."""
    return [run.folder for run in write_campaign(config.campaign, config.raw_dir, log)]


def _since(start: float) -> str:
    return f"{time.perf_counter() - start:.1f} s"


def run_demo(config: DemoConfig, log: Log = _stderr) -> DemoReport:
    """Run the whole demo into `config.out` and `config.warehouse_path`."""
    from pipelines.analysis.changes.history import find_changes
    from pipelines.analysis.chunks.chunk_store import extract_chunks
    from pipelines.analysis.comparison.run_sets import compare_run_sets
    from pipelines.analysis.tau.fit_store import fit_and_store
    from pipelines.ingest.load import ingest_paths
    from pipelines.quality.checks import run_checks
    from pipelines.selectors import SelectorError
    from pipelines.store import open_store, queries
    from pipelines.store.schema import CANONICAL_TABLES

    report = DemoReport(config)
    t0 = time.perf_counter()
    folders = simulate_campaign(config, log)
    report.timings["simulate_s"] = time.perf_counter() - t0

    con = open_store(config.warehouse_path).open()
    try:
        report.rows_before = queries.row_counts(con, CANONICAL_TABLES)
        t = time.perf_counter()
        batch = 20
        for i in range(0, len(folders), batch):
            ingested = ingest_paths(folders[i : i + batch], con, progress=False)
            report.run_ids += [r.run_id for r in ingested.runs]
            report.quarantined += [q.message() for q in ingested.quarantined]
            done = min(i + batch, len(folders))
            log(f"ingest {done}/{len(folders)} runs  {_since(t)}")
        report.timings["ingest_s"] = time.perf_counter() - t

        t = time.perf_counter()
        extracted = extract_chunks(con, report.run_ids)
        report.chunks = extracted.total_chunks
        fractions = [r.unassigned_fraction or 0.0 for r in extracted.runs]
        report.unassigned_fraction_max = max(fractions, default=0.0)
        log(f"chunks: {report.chunks} from {len(extracted.runs)} runs  {_since(t)}")
        report.timings["chunks_s"] = time.perf_counter() - t

        t = time.perf_counter()
        fitted = fit_and_store(con)
        report.curves = fitted.fits.filter(pl.col("model").is_in(list(config.campaign.models)))
        report.check = check_curves(report.curves)
        log(f"fit: {report.curves.height} curves  {_since(t)}")
        report.timings["fit_s"] = time.perf_counter() - t

        t = time.perf_counter()
        try:
            report.comparison = compare_run_sets(
                con, config.compare_baseline, config.compare_candidate
            )
            log(f"compare: {len(report.comparison.metrics)} metrics  {_since(t)}")
        except SelectorError as exc:  # the quick campaign has no VPP run
            report.comparison_skipped = str(exc)
            log(f"compare: skipped, {exc}")
        report.timings["compare_s"] = time.perf_counter() - t

        t = time.perf_counter()
        scan = find_changes(con, build=report.comparison is None)
        changes, series = scan.changes, scan.series
        history = config.campaign.history
        report.regressions = RegressionCheck(
            changes, series, history.expected_regression(), history.first_night
        )
        log(f"regressions: {len(changes)} change points in {series} series  {_since(t)}")
        report.timings["regressions_s"] = time.perf_counter() - t

        t = time.perf_counter()
        report.quality = run_checks(con, report.run_ids)
        log(f"check: {len(report.quality.errors)} failing  {_since(t)}")
        report.timings["check_s"] = time.perf_counter() - t

        if config.replay_schedules:
            t = time.perf_counter()
            report.replay = replay_first(con, config, report.run_ids)
            if report.replay is not None:
                log(f"replay: {len(report.replay.reruns)} reruns  {_since(t)}")
            report.timings["replay_s"] = time.perf_counter() - t

        if config.dashboards:
            from dashboards.data import change_point_frame
            from dashboards.site import build_site

            t = time.perf_counter()
            report.site = build_site(
                con, None, config.site_dir, change_point_frame(report.regressions.changes)
            )
            log(f"dashboards: {len(report.site.pages)} pages  {_since(t)}")
            report.timings["dashboards_s"] = time.perf_counter() - t
        report.rows_after = queries.row_counts(con, CANONICAL_TABLES)
    finally:
        con.close()
    report.timings["total_s"] = time.perf_counter() - t0
    return report


def replay_first(con, config: DemoConfig, run_ids: list[str]):
    """Replay the campaign's first DeepSeek (else first) CPP run under the replay schedules."""
    from pipelines.replay.store import replay_run
    from pipelines.store import queries

    rows = queries.cpp_runs_by_length(con, run_ids)
    if not rows:
        return None
    preferred = [r for r, model in rows if model == "deepseek-v3.1"]
    target = preferred[0] if preferred else rows[0][0]
    return replay_run(con, target, list(config.replay_schedules))
