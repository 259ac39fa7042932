"""Change points over the nightly history of each configuration and metric: the library door
`tracereplay regressions` (and later Dagster) share."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import duckdb
import numpy as np
import polars as pl
from statsmodels.stats.multitest import multipletests

from pipelines.analysis.changes.changepoint_defaults import (
    DEFAULT_FDR,
    DEFAULT_MAX_PVALUE,
    WITHDRAW_LOOKBACK,
)
from pipelines.analysis.changes.changepoints import (
    DEFAULT_MIN_MAGNITUDE,
    SPIKE_WINDOW,
    ChangePoint,
    detect_change_points,
    isolated_nights,
    series_pvalue,
)
from pipelines.analysis.changes.rescans import (
    NightlyConfirmation,
    nightly_confirmations,
    withdrawn_points,
)
from pipelines.analysis.changes.search_cache import cached_search
from pipelines.analysis.runs.run_metrics import CONFIG_KEYS, METRICS, build_marts, check_metrics
from pipelines.labels import is_untagged
from pipelines.selectors import parse_selector, require_runs
from pipelines.store import queries

DEFAULT_HISTORY_METRICS = ("ttft_ns", "makespan_ns", "throughput_tok_s")
# a configuration whose runs carry no chunks (a training or a plain inference profile) has no
# TTFT, makespan or throughput; its history is judged on the step breakdown instead
FALLBACK_HISTORY_METRICS = ("total_ns", "compute_ns", "exposed_comm_ns")


@dataclass(frozen=True)
class HistoryChange:
    """One change point of one configuration's metric, with the runs around it."""

    config: dict[str, object]
    metric: str
    status: str  # confirmed | pending
    direction: str  # regression | improvement
    run_before: str
    collected_before: str
    run_after: str
    collected_after: str
    # the first run after the change lies between these two, at 95 % (the posterior set of the
    # break date, break_date.posterior_date_set): the runs to bisect
    earliest_after_run: str
    earliest_after_at: str
    latest_after_run: str
    latest_after_at: str
    n_before: int
    n_after: int
    magnitude: float
    magnitude_lo: float
    magnitude_hi: float
    p_value: float
    # Benjamini-Hochberg q across every series of the scan (a series without a point enters with
    # its best split's p); NaN: not computed
    q_value: float = math.nan

    @property
    def is_regression(self) -> bool:
        """A confirmed regression that also survives the false-discovery control across series
        (q <= DEFAULT_FDR)."""
        within_fdr = math.isnan(self.q_value) or self.q_value <= DEFAULT_FDR
        return self.status == "confirmed" and self.direction == "regression" and within_fdr

    def as_dict(self) -> dict[str, object]:
        return {**self.__dict__, "config": dict(self.config)}


@dataclass(frozen=True)
class ScreenedNight:
    """A single-night spike set aside before change-point detection (docs/regressions.md): the
    night's run and how far it sat from the median of its neighbours."""

    config: dict[str, object]
    metric: str
    run_id: str
    collected_at: str
    deviation: float  # value / median of the up-to-SPIKE_WINDOW nights on each side - 1

    def as_dict(self) -> dict[str, object]:
        return {**self.__dict__, "config": dict(self.config)}


@dataclass(frozen=True)
class WithdrawnChange:
    """A point an earlier nightly scan confirmed that the latest scan no longer finds (within
    +-2 nights): withdrawn, with the night of the scan that last confirmed it."""

    config: dict[str, object]
    metric: str
    run_after: str
    collected_after: str
    confirmed_through: str  # collected_at of the last night of the scan that confirmed it
    magnitude: float
    p_value: float

    def as_dict(self) -> dict[str, object]:
        return {**self.__dict__, "config": dict(self.config)}


@dataclass(frozen=True)
class ChangeScan:
    """What `find_changes` found: change points, how many series (configuration x metric) were
    examined, and the single-night spikes screened out of them; points withdrawn since an
    earlier nightly scan confirmed them; the false alarms to expect."""

    changes: list[HistoryChange]
    series: int
    spikes: list[ScreenedNight]
    untagged_runs: int = 0  # runs without a model fact, taken as one workload per other facts
    withdrawn: list[WithdrawnChange] = field(default_factory=list)

    @property
    def expected_false_alarms(self) -> float:
        """Series that raise a point with no change in them, at most, in one scan: each series'
        gate lets a changeless series through with probability DEFAULT_MAX_PVALUE."""
        return self.series * DEFAULT_MAX_PVALUE


def find_changes(
    con: duckdb.DuckDBPyConnection,
    selector: str | None = None,
    metrics: list[str] | None = None,
    *,
    since: str | None = None,
    min_magnitude: float = DEFAULT_MIN_MAGNITUDE,
    build: bool = True,
    withdrawn: bool = True,
) -> ChangeScan:
    """Change points per configuration and metric over collected_at, how many series were
    examined and the spikes screened out; `withdrawn`: also re-run the last WITHDRAW_LOOKBACK
    nightly scans of each series and name the points they confirmed that the latest scan
    contradicts. Each point gets its Benjamini-Hochberg q across the series examined.
    SelectorError / UnknownMetricError on bad input."""
    chosen = check_metrics(metrics, DEFAULT_HISTORY_METRICS)
    if metrics is None:
        chosen = [*chosen, *FALLBACK_HISTORY_METRICS]
    text = ",".join(t for t in (selector, f"since={since}" if since else None) if t)
    run_ids = require_runs(con, parse_selector(text))
    if build:
        build_marts(con)
    values = queries.metric_values(con, run_ids, chosen, collected_only=True)
    if metrics is None:
        values = _default_metrics_per_config(values)
    changes: list[HistoryChange] = []
    spikes: list[ScreenedNight] = []
    gone: list[WithdrawnChange] = []
    series_p: list[float] = []  # one p per series without a point, for the q-values
    series = 0
    untagged: set[str] = set()
    for key, group in values.group_by([*CONFIG_KEYS, "metric"], maintain_order=True):
        series += 1
        config = dict(zip(CONFIG_KEYS, key[:-1], strict=True))
        if is_untagged(config):
            untagged.update(group["run_id"].to_list())
        metric = key[-1]
        y = group["value"].to_numpy().astype(float)
        runs = group["run_id"].to_list()
        when = [str(t)[:19] for t in group["collected_at"].to_list()]
        spikes += _spikes(config, metric, y, runs, when)
        found, gate_p = search_series(y, min_magnitude)
        if not found:
            series_p.append(gate_p)
        if withdrawn:
            gone += _withdrawn(config, metric, y, runs, when, found, min_magnitude)
        for cp in found:
            worse = (cp.magnitude > 0) == METRICS[metric].lower_is_better
            changes.append(
                HistoryChange(
                    config=config,
                    metric=metric,
                    status=cp.status,
                    direction="regression" if worse else "improvement",
                    run_before=runs[cp.index - 1],
                    collected_before=when[cp.index - 1],
                    run_after=runs[cp.index],
                    collected_after=when[cp.index],
                    earliest_after_run=runs[cp.index_lo],
                    earliest_after_at=when[cp.index_lo],
                    latest_after_run=runs[cp.index_hi],
                    latest_after_at=when[cp.index_hi],
                    n_before=cp.n_before,
                    n_after=cp.n_after,
                    magnitude=cp.magnitude,
                    magnitude_lo=cp.magnitude_lo,
                    magnitude_hi=cp.magnitude_hi,
                    p_value=cp.p_value,
                )
            )
    return ChangeScan(_with_q(changes, series_p), series, spikes, len(untagged), gone)


def _with_q(changes: list[HistoryChange], other_p: list[float]) -> list[HistoryChange]:
    """Each point's Benjamini-Hochberg q over every p of the scan: the points' and, for each
    series without a point, its best split's (multiplicity across series)."""
    p = [ch.p_value for ch in changes] + other_p
    finite = [i for i, v in enumerate(p) if math.isfinite(v)]
    q = [math.nan] * len(p)
    if finite:
        _, adjusted, _, _ = multipletests([p[i] for i in finite], method="fdr_bh")
        for i, v in zip(finite, adjusted, strict=True):
            q[i] = float(v)
    return [replace(ch, q_value=q[i]) for i, ch in enumerate(changes)]


def _withdrawn(config, metric, y, runs, when, latest, min_magnitude) -> list[WithdrawnChange]:
    """The points of the last WITHDRAW_LOOKBACK nightly scans of one series that the latest
    scan (`latest`) no longer finds (indexes count finite values, as detect_change_points')."""
    finite = np.flatnonzero(np.isfinite(y))
    out = []
    for c in _withdrawn_search(y, latest, min_magnitude):
        row, last = int(finite[c.point.index]), int(finite[c.nights - 1])
        out.append(
            WithdrawnChange(
                config,
                metric,
                runs[row],
                when[row],
                when[last],
                c.point.magnitude,
                c.point.p_value,
            )
        )
    return out


def search_series(y: np.ndarray, min_magnitude: float) -> tuple[list[ChangePoint], float]:
    """The change points of one series (detect_change_points) and, when it has none, its gate p
    (series_pvalue; NaN otherwise): from the search cache when this exact series was searched
    before (pipelines.analysis.changes.search_cache)."""

    def search() -> tuple[list[ChangePoint], float]:
        found = detect_change_points(np.asarray(y), min_magnitude=min_magnitude)
        return found, (math.nan if found else series_pvalue(np.asarray(y)))

    return cached_search(
        "points",
        y,
        {"min_magnitude": min_magnitude},
        search,
        lambda r: {"points": [_point_json(cp) for cp in r[0]], "gate_p": r[1]},
        lambda d: ([_point_of(p) for p in d["points"]], float(d["gate_p"])),
    )


def _withdrawn_search(
    y: np.ndarray, latest: list[ChangePoint], min_magnitude: float
) -> list[NightlyConfirmation]:
    """withdrawn_points of the last WITHDRAW_LOOKBACK nightly scans of one series against the
    latest scan (`latest`: search_series' points of the same y, so y and min_magnitude are all
    it depends on), cached as search_series is."""

    def search() -> list[NightlyConfirmation]:
        values = y[np.isfinite(y)]
        first = max(0, len(values) - WITHDRAW_LOOKBACK)
        seen = nightly_confirmations(values, first=first, min_magnitude=min_magnitude)
        seen = [c for c in seen if c.nights < len(values)]
        return withdrawn_points(seen, latest)

    return cached_search(
        "withdrawn",
        y,
        {"min_magnitude": min_magnitude, "lookback": WITHDRAW_LOOKBACK},
        search,
        lambda gone: [{"nights": c.nights, "point": _point_json(c.point)} for c in gone],
        lambda d: [NightlyConfirmation(int(c["nights"]), _point_of(c["point"])) for c in d],
    )


_INT_FIELDS = ("index", "index_lo", "index_hi", "n_before", "n_after")


def _point_json(cp: ChangePoint) -> dict[str, object]:
    return {k: (int(v) if k in _INT_FIELDS else v) for k, v in cp.as_dict().items()}


def _point_of(d: dict) -> ChangePoint:
    return ChangePoint(
        **{
            k: (int(d[k]) if k in _INT_FIELDS else d[k] if k == "status" else float(d[k]))
            for k in ChangePoint.__dataclass_fields__
        }
    )


def _spikes(
    config: dict[str, object], metric: str, y: np.ndarray, runs: list[str], when: list[str]
) -> list[ScreenedNight]:
    """The nights of one series that `detect_change_points` screens out as single spikes (its
    indices count finite values, as here)."""
    finite = np.flatnonzero(np.isfinite(y))
    values = y[finite]
    out = []
    for i in np.flatnonzero(isolated_nights(values)):
        neighbours = np.concatenate(
            [values[max(0, i - SPIKE_WINDOW) : i], values[i + 1 : i + 1 + SPIKE_WINDOW]]
        )
        row = int(finite[i])
        out.append(
            ScreenedNight(
                config, metric, runs[row], when[row], float(values[i] / np.median(neighbours) - 1)
            )
        )
    return out


def _default_metrics_per_config(values: pl.DataFrame) -> pl.DataFrame:
    """The default metrics where a configuration has any of them, else the fallback ones."""
    has_default = pl.col("metric").is_in(DEFAULT_HISTORY_METRICS).any().over(CONFIG_KEYS)
    wanted = pl.when(has_default).then(pl.col("metric").is_in(DEFAULT_HISTORY_METRICS))
    return values.filter(wanted.otherwise(pl.col("metric").is_in(FALLBACK_HISTORY_METRICS)))


def runs_around(
    con: duckdb.DuckDBPyConnection, change: HistoryChange, before: int = 5, after: int = 5
) -> tuple[list[str], list[str]]:
    """Up to `before` runs of the configuration just before the change and `after` from it on
    (for attribution)."""
    rows = queries.config_run_history(con, {k: change.config[k] for k in CONFIG_KEYS})
    ids = [r[0] for r in rows]
    i = ids.index(change.run_after)
    return ids[max(0, i - before) : i], ids[i : i + after]
