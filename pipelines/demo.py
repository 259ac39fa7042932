"""The demo campaign: simulate, write as profiler output, ingest, segment, fit, check, replay.

A small campaign of simulated runs (the three paper model presets x schedules x sequence
lengths x repeats, 3 % lognormal noise, one seed per run) is written as torch_npu text exports
under `<out>/raw/` and goes through the same path as real traces: `ingest_paths` reads the
folders into the warehouse, `extract_chunks` segments them by their chunk markers, `fit_curves`
fits tau_k per configuration and virtual stage. The self-check: every curve of a model with
dense attention is `linear`, every curve of the DSA model (sparse attention, GLM-5.2) is flagged
(any other verdict). Finally one run is replayed under other schedules (`replay_run`).

Everything is deterministic (seeds derive from each run's coordinates, trace timestamps from a
fixed epoch), so re-running the demo rewrites the same bytes, which ingest under the same run
ids: no rows are added.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from pipelines import paths

WAREHOUSE_NAME = "warehouse.duckdb"
DEMO_MODELS = ("qwen3-coder-30b-a3b", "deepseek-v3.1", "glm-5.2")


@dataclass(frozen=True)
class DemoConfig:
    """The campaign grid. Defaults: 3 models x 2 schedules x 2 lengths x 3 repeats = 36 runs;
    16K chunks give 8 and 16 chunks per request (pp=2: 2 stages under CPP, 4 under VPP)."""

    out: Path = field(default_factory=paths.demo_dir)  # data/demo under the project root
    warehouse: Path | None = None  # default <out>/warehouse.duckdb
    models: tuple[str, ...] = DEMO_MODELS
    schedules: tuple[str, ...] = ("cpp", "vpp")
    seq_lens: tuple[int, ...] = (131072, 262144)
    chunk_size: int = 16384
    pp: int = 2
    repeats: int = 3
    noise: float = 0.03
    seed: int = 0
    replay_schedules: tuple[str, ...] = ("cpp", "vpp", "vpp_pack")

    @property
    def warehouse_path(self) -> Path:
        return self.warehouse or self.out / WAREHOUSE_NAME

    def quick(self) -> DemoConfig:
        """The smallest campaign that still tests the verdicts: CPP at 128K only."""
        return replace(self, schedules=("cpp",), seq_lens=(self.seq_lens[0],))

    def runs(self) -> list[DemoRun]:
        return [
            DemoRun(model, schedule, seq_len, repeat)
            for model in self.models
            for schedule in self.schedules
            for seq_len in self.seq_lens
            for repeat in range(self.repeats)
        ]


@dataclass(frozen=True)
class DemoRun:
    """One simulated run of the campaign."""

    model: str
    schedule: str
    seq_len: int
    repeat: int

    def key(self) -> str:
        """Folder name under <out>/raw/ (short: run ids keep 40 characters of it)."""
        return f"{self.model}-{self.schedule}-{self.seq_len // 1024}k-r{self.repeat}"

    def seed(self, config: DemoConfig) -> int:
        """A seed that depends only on the run's coordinates (and the campaign seed)."""
        text = (
            f"{config.seed}/{self.model}/{self.schedule}/{self.seq_len}/{config.chunk_size}/"
            f"{config.pp}/{self.repeat}"
        )
        return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


@dataclass
class CurveCheck:
    """The demo's self-check over the fitted curves."""

    dense_linear: int = 0
    dense_total: int = 0
    dsa_flagged: int = 0
    dsa_total: int = 0
    flagged: list[dict[str, Any]] = field(default_factory=list)  # curves not `linear`
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures and self.dense_total > 0 and self.dsa_total > 0

    def summary(self) -> str:
        by_model: dict[str, dict[str, int]] = {}
        for curve in self.flagged:
            verdicts = by_model.setdefault(str(curve["model"]), {})
            verdicts[curve["verdict"]] = verdicts.get(curve["verdict"], 0) + 1
        flagged = (
            "; ".join(
                f"{model} ({', '.join(f'{v} {n}' for v, n in sorted(verdicts.items()))})"
                for model, verdicts in sorted(by_model.items())
            )
            or "none"
        )
        status = "passed" if self.ok else "FAILED"
        return (
            f"flagged (not linear): {len(self.flagged)} curves: {flagged}. "
            f"Self-check {status}: DSA curves flagged {self.dsa_flagged}/{self.dsa_total}, "
            f"dense-attention curves linear {self.dense_linear}/{self.dense_total}."
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "dense_linear": self.dense_linear,
            "dense_total": self.dense_total,
            "dsa_flagged": self.dsa_flagged,
            "dsa_total": self.dsa_total,
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
    replay: Any = None  # replay_store.ReplayReport
    timings: dict[str, float] = field(default_factory=dict)
    rows_before: dict[str, int] = field(default_factory=dict)
    rows_after: dict[str, int] = field(default_factory=dict)


def is_dsa(model: str) -> bool:
    """Whether a simulator preset uses DeepSeek sparse attention."""
    from pipelines.sim.presets import MODELS

    spec = MODELS.get(model)
    return spec is not None and spec.attention == "dsa"


def check_curves(curves: pl.DataFrame) -> CurveCheck:
    """Dense-attention curves must be `linear`; DSA curves must not be."""
    check = CurveCheck()
    for curve in curves.iter_rows(named=True):
        label = (
            f"{curve['model']} {curve['schedule']} s{curve['seq_len']} vs{curve['vstage']}: "
            f"{curve['verdict']}"
        )
        linear = curve["verdict"] == "linear"
        if not linear:
            check.flagged.append(curve)
        if is_dsa(str(curve["model"])):
            check.dsa_total += 1
            check.dsa_flagged += not linear
            if linear:
                check.failures.append(f"DSA curve judged linear: {label}")
        else:
            check.dense_total += 1
            check.dense_linear += linear
            if not linear:
                check.failures.append(f"dense-attention curve not linear: {label}")
    return check


Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def simulate_campaign(config: DemoConfig, log: Log = _stderr) -> list[Path]:
    """Simulate every run of the campaign and write it under <out>/raw/<key>/; return the run
    folders. A run's folder is replaced as a whole (its content is deterministic)."""
    from pipelines.sim.run import simulate
    from pipelines.sim.writers_ascend import write_ascend_pt

    raw = config.out / "raw"
    runs = config.runs()
    folders = []
    start = time.perf_counter()
    for i, run in enumerate(runs, start=1):
        folder = raw / run.key()
        result = simulate(
            run.seq_len,
            run.schedule,
            model=run.model,
            chunk_size=config.chunk_size,
            pp=config.pp,
            noise=config.noise,
            seed=run.seed(config),
        )
        if folder.exists():
            shutil.rmtree(folder)
        write_ascend_pt(result, folder)
        folders.append(folder)
        if i == len(runs) or runs[i].model != run.model:
            log(f"simulate {i}/{len(runs)} runs ({run.model} done)  {_since(start)}")
    return folders


def _since(start: float) -> str:
    return f"{time.perf_counter() - start:.1f} s"


def run_demo(config: DemoConfig, log: Log = _stderr) -> DemoReport:
    """Run the whole demo into `config.out` and `config.warehouse_path`."""
    from pipelines import warehouse
    from pipelines.analysis.chunk_store import extract_chunks
    from pipelines.ingest.load import ingest_paths

    report = DemoReport(config)
    t0 = time.perf_counter()
    folders = simulate_campaign(config, log)
    report.timings["simulate_s"] = time.perf_counter() - t0

    con = warehouse.connect(config.warehouse_path)
    try:
        report.rows_before = warehouse.row_counts(con)
        t = time.perf_counter()
        per_model = len(folders) // len(config.models)
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
        report.curves = fit_campaign(con, report.run_ids)
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


def fit_campaign(con, run_ids: list[str]) -> pl.DataFrame:
    """fit_curves over the chunks of the campaign's runs (not replays, not other runs)."""
    from pipelines.analysis.curves import fit_curves
    from pipelines.analysis.tau_points import load_tau_points

    chunks, _ = load_tau_points(con, segment=False)
    return fit_curves(chunks.filter(pl.col("run_id").is_in(run_ids)))


def replay_first(con, config: DemoConfig, run_ids: list[str]):
    """Replay the campaign's first DeepSeek (else first) CPP run under the replay schedules."""
    from pipelines.sim.replay_store import replay_run

    rows = con.execute(
        "select run_id, model from runs where run_id in (select unnest(?::varchar[]))"
        " and schedule = 'cpp' order by seq_len, run_id",
        [run_ids],
    ).fetchall()
    if not rows:
        return None
    preferred = [r for r, model in rows if model == "deepseek-v3.1"]
    target = preferred[0] if preferred else rows[0][0]
    return replay_run(con, target, list(config.replay_schedules))
