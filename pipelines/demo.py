"""The demo: simulate a campaign, write it as profiler output, ingest, segment, fit, check, replay.

The campaign (pipelines.campaign: the three paper presets x schedules x sequence lengths x
repeats, 3 % lognormal noise, one seed per run) is written as torch_npu text exports under
`<out>/raw/` exactly as the Dagster asset `sim_campaign` writes it, and goes through the same path
as real traces: `ingest_paths` reads the folders into the warehouse, `extract_chunks` segments
them by their chunk markers, `fit_and_store` fits tau_k per configuration and virtual stage and
stores `tau_fits`. The self-check is the verdict policy (pipelines.analysis.verdict_policy) the
Dagster checks apply: dense-attention curves are not flagged, sparse-attention (DSA) curves are
not linear; the demo also requires each kind to be decided at least once, since its campaign
holds both. Finally one run is replayed under other schedules (`replay_run`).

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
from pipelines.analysis.verdict_policy import ExpectationResult, check_fits
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

    @property
    def warehouse_path(self) -> Path:
        return self.warehouse or self.out / WAREHOUSE_NAME

    @property
    def raw_dir(self) -> Path:
        return self.out / "raw"

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
    timings: dict[str, float] = field(default_factory=dict)
    rows_before: dict[str, int] = field(default_factory=dict)
    rows_after: dict[str, int] = field(default_factory=dict)


def check_curves(curves: pl.DataFrame) -> CurveCheck:
    """The verdict policy over the curves (pipelines.analysis.verdict_policy.check_fits)."""
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
    from pipelines import warehouse
    from pipelines.analysis.chunk_store import extract_chunks
    from pipelines.analysis.fit_store import fit_and_store
    from pipelines.ingest.load import ingest_paths

    report = DemoReport(config)
    t0 = time.perf_counter()
    folders = simulate_campaign(config, log)
    report.timings["simulate_s"] = time.perf_counter() - t0

    con = warehouse.connect(config.warehouse_path)
    try:
        report.rows_before = warehouse.row_counts(con)
        t = time.perf_counter()
        per_model = len(folders) // len(config.campaign.models)
        for i in range(0, len(folders), per_model):
            ingested = ingest_paths(folders[i : i + per_model], con, progress=False)
            report.run_ids += [r.run_id for r in ingested.runs]
            report.quarantined += [q.message() for q in ingested.quarantined]
            done = min(i + per_model, len(folders))
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

        if config.replay_schedules:
            t = time.perf_counter()
            report.replay = replay_first(con, config, report.run_ids)
            if report.replay is not None:
                log(f"replay: {len(report.replay.reruns)} reruns  {_since(t)}")
            report.timings["replay_s"] = time.perf_counter() - t
        report.rows_after = warehouse.row_counts(con)
    finally:
        con.close()
    report.timings["total_s"] = time.perf_counter() - t0
    return report


def replay_first(con, config: DemoConfig, run_ids: list[str]):
    """Replay the campaign's first DeepSeek (else first) CPP run under the replay schedules."""
    from pipelines import warehouse_queries
    from pipelines.replay.store import replay_run

    rows = warehouse_queries.cpp_runs_by_length(con, run_ids)
    if not rows:
        return None
    preferred = [r for r, model in rows if model == "deepseek-v3.1"]
    target = preferred[0] if preferred else rows[0][0]
    return replay_run(con, target, list(config.replay_schedules))
