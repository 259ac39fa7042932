"""Schedules side by side, as the VPP paper's Table 2: per workload, CPP against DCPP, VPP and the
VPP variants, with intervals over repeats, and beside each measured change the change the replay
of the same CPP runs' tau_k predicts. The library door `tracereplay schedules` and Dagster share
(docs/schedule_comparison.md).

Per workload (WORKLOAD_KEYS) and schedule, per part (compute, bubble, exposed comm, total; the
per-rank means of fct_run_metrics, bubble and total over the run's window as table 2 counts
them: run_bubble_ns, run_total_ns, docs/metrics.md): n, the mean with its 95 % Student-t
interval; against CPP the difference of means with Welch's interval, and the relative change
with the bootstrap interval, Welch's t on log values and Holm's correction of
pipelines.analysis.comparison.compare.compare_samples (the `compare` statistics). The prediction:
every
measured CPP run of the workload replayed (pipelines.replay.store.replay_run) under each schedule
present; per CPP run the rerun's part over the CPP rerun's part minus one, then the mean over
the CPP runs with its Student-t interval. A measured change falls short of the prediction when
its whole interval lies above the predicted interval and the gap exceeds `min_effect`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import duckdb
import numpy as np
import polars as pl

from pipelines import schedule_kinds
from pipelines.analysis.comparison.compare import (
    DEFAULT_MIN_EFFECT,
    MIN_RUNS,
    compare_samples,
    welch_difference_interval,
)
from pipelines.analysis.comparison.mean_interval import mean_interval
from pipelines.analysis.runs.run_metrics import build_marts
from pipelines.labels import UNTAGGED, tokens
from pipelines.replay.options import SCHEDULE_CHOICES
from pipelines.replay.store import ReplayError, replay_run, replay_run_id
from pipelines.selectors import parse_selector, require_runs
from pipelines.store import queries

WORKLOAD_KEYS: tuple[str, ...] = (
    *("model", "seq_len", "chunk_size", "tp", "pp", "hardware", "source"),
)
"""A workload: one prompt length and chunk budget of one model on one setup, read by one reader
(source); schedules vary. `model` is the configuration's (sql/staging/stg_run_configuration.sql):
an untagged run is a workload of its own, never compared with another until tagged alike."""
TAG_HINT = "tracereplay ingest DIR --tag model=NAME --tag schedule=cpp"

PARTS: tuple[tuple[str, str], ...] = (
    ("compute_ns", "compute"),
    ("run_bubble_ns", "bubble"),
    ("exposed_comm_ns", "exposed comm"),
    ("run_total_ns", "total"),
)
BASELINE = schedule_kinds.BASELINE
SCHEDULE_ORDER = schedule_kinds.NAMES
NEGLIGIBLE_SHARE = 0.001
"""A part under this share of the total in every run of a workload is called negligible."""


@dataclass(frozen=True)
class PartComparison:
    """One part (compute, bubble, ...) of one schedule in one workload. Times in ns; relative
    figures as fractions (0.05 = +5 %); NaN where a figure cannot be had (n too small)."""

    schedule: str
    part: str
    n: int
    mean: float
    mean_lo: float
    mean_hi: float
    delta: float  # mean - mean of CPP
    delta_lo: float
    delta_hi: float
    delta_rel: float  # mean / mean of CPP - 1
    delta_rel_lo: float
    delta_rel_hi: float
    test: str
    p_adjusted: float
    verdict: str  # compare's verdict of the relative change: improved, regressed, ...
    n_predicted: int  # CPP runs replayed
    predicted_rel: float
    predicted_rel_lo: float
    predicted_rel_hi: float
    versus_predicted: str  # short, beyond, within_noise, n/a
    reason: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class WorkloadComparison:
    """The schedules of one workload: their runs, one row per schedule and part, and notes."""

    workload: dict[str, object]
    runs: dict[str, list[str]]  # schedule -> measured run ids
    rows: list[PartComparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def row(self, schedule: str, part: str) -> PartComparison | None:
        return next((r for r in self.rows if r.schedule == schedule and r.part == part), None)


@dataclass
class ScheduleReport:
    """Every workload the selector covers, and what the replay did."""

    selector: str
    cost: str
    min_effect: float
    workloads: list[WorkloadComparison]
    replayed: list[str] = field(default_factory=list)  # CPP runs replayed by this call
    skipped: list[str] = field(default_factory=list)  # why a workload or replay was left out
    untagged_runs: int = 0  # measured runs without a model fact: a workload each, not compared

    @property
    def shortfalls(self) -> list[tuple[dict[str, object], PartComparison]]:
        return [
            (w.workload, r) for w in self.workloads for r in w.rows if r.versus_predicted == "short"
        ]


def _welch_interval(base: np.ndarray, cand: np.ndarray) -> tuple[float, float, float]:
    """mean(cand) - mean(base) with Welch's 95 % interval (compare.welch_difference_interval)."""
    if len(base) == 0 or len(cand) == 0:
        return math.nan, math.nan, math.nan
    delta = float(cand.mean() - base.mean())
    if min(len(base), len(cand)) < 2:
        return delta, math.nan, math.nan
    return delta, *welch_difference_interval(base, cand, 0.95)


def _versus(
    lo: float, hi: float, effect: float, plo: float, phi: float, pred: float, min_effect: float
) -> tuple[str, str]:
    if not all(math.isfinite(x) for x in (lo, hi, plo, phi)):
        return "n/a", f"needs >= {MIN_RUNS} runs of each schedule and >= 2 replayed CPP runs"
    gap = effect - pred
    if lo > phi and gap > min_effect:
        return "short", f"measured {effect:+.1%} vs predicted {pred:+.1%}: intervals apart"
    if hi < plo and gap < -min_effect:
        return "beyond", f"measured {effect:+.1%} vs predicted {pred:+.1%}: better than replay"
    return "within_noise", "measured and predicted intervals overlap or differ by < min effect"


def _ordered(schedules: list[str]) -> list[str]:
    known = [s for s in SCHEDULE_ORDER if s in schedules]
    return known + sorted(s for s in schedules if s not in SCHEDULE_ORDER)


def _ensure_replays(
    con: duckdb.DuckDBPyConnection,
    cpp_runs: list[str],
    schedules: list[str],
    stored: set[str],
    cost: str,
    report: ScheduleReport,
) -> None:
    wanted = [s for s in schedules if s in SCHEDULE_CHOICES]
    for run_id in cpp_runs:
        missing = [s for s in wanted if replay_run_id(run_id, s, cost) not in stored]
        if not missing:
            continue
        why = _unreplayable(con, run_id)
        if why:
            report.skipped.append(f"replay of {run_id}: {why}")
            continue
        try:
            replay_run(con, run_id, missing, cost=cost)
        except (ReplayError, np.linalg.LinAlgError) as exc:
            report.skipped.append(f"replay of {run_id}: {exc}")
            continue
        report.replayed.append(run_id)


def _unreplayable(con: duckdb.DuckDBPyConnection, run_id: str) -> str:
    """Why the run's chunks cannot be replayed ('' when they can): a chunk without its token
    counts (a ProfilerStep window, `tracereplay chunks --profiler-steps`) gives the cost model
    no tokens to fit, and NaN tokens reach LAPACK as an illegal value."""
    chunks = queries.run_chunks(con, run_id)
    if chunks.height and ("tokens" not in chunks.columns or chunks["tokens"].is_null().any()):
        return "its chunks carry no token counts (ProfilerStep windows), nothing to replay"
    return ""


def _configured(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with the configuration's model (untagged: '(untagged) <run_id>'), its source and
    whether the run lacks a model fact, from sql/staging/stg_run_configuration.sql."""
    config = queries.run_configuration(con, frame["run_id"].to_list()).drop("is_replay")
    return frame.drop("model").join(config, on="run_id", how="left")


def _predictions(
    frame: pl.DataFrame, cpp_runs: list[str], schedule: str, part: str, cost: str
) -> np.ndarray:
    """Per CPP run: its rerun under `schedule` over its rerun under CPP, minus one."""
    value = dict(zip(frame["run_id"].to_list(), frame[part].to_list(), strict=True))
    out = []
    for run_id in cpp_runs:
        base = value.get(replay_run_id(run_id, BASELINE, cost))
        cand = value.get(replay_run_id(run_id, schedule, cost))
        if base is not None and cand is not None and base > 0:
            out.append(cand / base - 1.0)
    return np.array(out, dtype=float)


def _compare_workload(
    workload: dict[str, object],
    measured: pl.DataFrame,
    reruns: pl.DataFrame,
    cost: str,
    min_effect: float,
) -> WorkloadComparison:
    schedules = _ordered(measured["schedule"].unique().to_list())
    runs = {s: measured.filter(pl.col("schedule") == s)["run_id"].to_list() for s in schedules}
    result = WorkloadComparison(workload, runs)
    cpp_runs = runs.get(BASELINE, [])
    if not cpp_runs:
        result.notes.append("no cpp runs: no change against CPP, no prediction")

    def values(schedule: str, part: str) -> np.ndarray:
        col = measured.filter(pl.col("schedule") == schedule)[part]
        return col.drop_nulls().to_numpy().astype(float)

    for schedule in schedules:
        against = {}
        if cpp_runs and schedule != BASELINE:
            samples = {part: (values(BASELINE, part), values(schedule, part)) for part, _ in PARTS}
            against = {
                m.metric: m
                for m in compare_samples(
                    samples, dict.fromkeys(samples, True), min_effect=min_effect
                )
            }
        for part, label in PARTS:
            mine = values(schedule, part)
            mean, lo, hi = mean_interval(mine.tolist())
            nan3 = (math.nan, math.nan, math.nan)
            delta = _welch_interval(values(BASELINE, part), mine) if part in against else nan3
            cmp = against.get(part)
            pred = _predictions(reruns, cpp_runs, schedule, part, cost)
            p_mean, p_lo, p_hi = mean_interval(pred.tolist())
            if cmp is None:
                rel = (math.nan,) * 3
                test, p_adj, verdict, versus, reason = "none", math.nan, "baseline", "n/a", ""
            else:
                rel = (cmp.effect, cmp.effect_lo, cmp.effect_hi)
                test, p_adj, verdict = cmp.test, cmp.p_adjusted, cmp.verdict
                versus, reason = _versus(*rel[1:], rel[0], p_lo, p_hi, p_mean, min_effect)
                if verdict == "inconclusive":
                    reason = f"{cmp.reason}; {reason}"
            result.rows.append(
                PartComparison(
                    schedule, label, len(mine), mean, lo, hi, *delta, *rel, test, p_adj,
                    verdict, len(pred), p_mean, p_lo, p_hi, versus, reason,
                )
            )  # fmt: skip
    total = measured["run_total_ns"].to_numpy().astype(float)
    comm = measured["exposed_comm_ns"].to_numpy().astype(float)
    if len(total) and np.all(comm <= NEGLIGIBLE_SHARE * total):
        result.notes.append(
            f"exposed comm is negligible in every run (at most {comm.max() / 1e6:.3g} ms, under "
            f"{NEGLIGIBLE_SHARE:.1%} of the total): its changes say nothing about communication"
        )
    return result


def compare_schedules(
    con: duckdb.DuckDBPyConnection,
    selector: str | None = None,
    *,
    replay: bool = True,
    cost: str = "tabulated",
    min_effect: float = DEFAULT_MIN_EFFECT,
    build: bool = True,
) -> ScheduleReport:
    """Compare the schedules of every workload among the runs `selector` selects (measured runs;
    reruns are never a side). With `replay`, CPP runs not yet replayed under the workload's
    schedules are replayed and their reruns written (deterministic ids: nothing is written
    twice). SelectorError when the selector is bad or matches nothing."""
    sel = parse_selector(selector)
    run_ids = require_runs(con, sel)
    if build:
        build_marts(con)
    report = ScheduleReport(sel.text, cost, min_effect, [])
    frame = queries.schedule_breakdown(con, run_ids)
    measured = _configured(con, frame.filter(pl.col("replay_of").is_null()))
    report.untagged_runs = int(measured["is_untagged"].fill_null(False).sum())
    measured = measured.filter(pl.col("schedule").is_not_null() & ~pl.col("is_untagged"))
    if replay:
        stored = set(frame["run_id"].to_list())
        for _, group in measured.group_by(list(WORKLOAD_KEYS), maintain_order=True):
            if group["schedule"].n_unique() < 2:
                continue  # nothing to compare: no prediction wanted
            cpp = group.filter(pl.col("schedule") == BASELINE)["run_id"].to_list()
            schedules = [BASELINE, *group["schedule"].unique().to_list()]
            _ensure_replays(con, cpp, list(dict.fromkeys(schedules)), stored, cost, report)
        if report.replayed:
            frame = queries.schedule_breakdown(con, run_ids)
    reruns = frame.filter(pl.col("replay_of").is_not_null())
    for key, group in measured.group_by(list(WORKLOAD_KEYS), maintain_order=True):
        workload = dict(zip(WORKLOAD_KEYS, key, strict=True))
        if group["schedule"].n_unique() < 2:
            report.skipped.append(
                f"{workload_label(workload)}: one schedule only ({group['schedule'][0]}), "
                "nothing to compare"
            )
            continue
        report.workloads.append(_compare_workload(workload, group, reruns, cost, min_effect))
    return report


def _label(workload: dict[str, object]) -> str:
    """The known facts of a workload: 'deepseek-v3.1 seq 512K chunk 24K tp8 pp2' (an unknown one
    left out, never 'None')."""
    w = workload
    parts = [str(w.get("model") or UNTAGGED)]
    for name, key in (("seq", "seq_len"), ("chunk", "chunk_size")):
        if w.get(key) is not None:
            parts.append(f"{name} {tokens(w[key])}")  # type: ignore[arg-type]
    parts += [f"{key}{w[key]}" for key in ("tp", "pp") if w.get(key) is not None]
    return " ".join(parts)


def workload_label(workload: dict[str, object]) -> str:
    """'deepseek-v3.1 seq 512K chunk 24K tp8 pp2 (ascend-910c, kineto)': hardware and reader
    where known."""
    setup = [str(workload[k]) for k in ("hardware", "source") if workload.get(k)]
    return _label(workload) + (f" ({', '.join(setup)})" if setup else "")
