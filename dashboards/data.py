"""The data behind every chart: named queries that take a DuckDB connection and the selected run
ids and return small Polars frames, aggregated in DuckDB (sql/marts/) before any chart sees them.

No chart gets more than MAX_CHART_ROWS rows: the aggregates below are small by construction
(per run x stage x chunk, per run x rank, per schedule), and a frame that would still be larger
raises ChartDataTooLarge instead of being cut; the timeline keeps each run's first spans in time
order (a Gantt of more spans is unreadable anyway) and says so in its frame (`truncated`)."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from pipelines import schedule_kinds
from pipelines.analysis.comparison.mean_interval import t_interval
from pipelines.analysis.tau.tau_points import load_tau_points
from pipelines.store import queries

MAX_CHART_ROWS = 5000
MIN_NIGHTS = 3  # a configuration needs runs on this many nights to be charted as a trend
LEVEL = 0.95
TIMELINE_SCHEDULES = schedule_kinds.BASES
WORKLOAD = ("model", "seq_len", "chunk_size")
TIMELINE_WORKLOAD = (*WORKLOAD, "hardware", "source")
"""One workload on one setup read by one reader: a timeline never sets runs of two beside."""


class ChartDataTooLarge(ValueError):
    """An aggregate still has more rows than a chart may embed."""


def relation_sql(relation: str) -> str:
    """A query over one derived relation of sql/ (pipelines.store.relations builds them as views on
    every warehouse connection, temp views on a read-only one)."""
    return f"select * from {relation}"


def _query(
    con: duckdb.DuckDBPyConnection, relation: str, select: str, run_ids: list[str]
) -> pl.DataFrame:
    """`select` (which reads the relation as `rel` and its ids as `ids`) over the selected runs."""
    con.execute(
        "create or replace temp table _dash_ids as select unnest(?::varchar[]) as run_id", [run_ids]
    )
    sql = f"with rel as ({relation_sql(relation)}), ids as (select run_id from _dash_ids) {select}"
    return con.execute(sql).pl()


def _checked(frame: pl.DataFrame, what: str) -> pl.DataFrame:
    if frame.height > MAX_CHART_ROWS:
        raise ChartDataTooLarge(
            f"{what}: {frame.height} rows after aggregation (at most {MAX_CHART_ROWS}); "
            "narrow the run selection"
        )
    return frame


def with_replays(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[str]:
    """The run ids plus the simulated reruns of them (`tracereplay replay`, replay_of set)."""
    return list(dict.fromkeys([*run_ids, *queries.replays_of(con, run_ids)]))


# ---- tau_k ---------------------------------------------------------------------------------

CURVE_LABEL = pl.format(
    "{} · {} · chunk {} · seq {} · vs {}",
    "model",
    "schedule",
    "chunk_size",
    "seq_len",
    "vstage",
)


def tau_points(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pl.DataFrame:
    """tau_k points: one per run x curve x chunk index, tau_ms the mean over the run's requests
    (sql/marts/fct_tau_by_chunk.sql), partial remainder chunks left out (as `fit` does)."""
    frame = _query(
        con,
        "fct_tau_by_chunk",
        "select model, schedule, chunk_size, seq_len, vstage, chunk_idx, run_id, n_requests,"
        " tau_mean_ns / 1e6 as tau_ms from rel where run_id in (select run_id from ids)"
        " and not any_partial order by all",
        run_ids,
    )
    return _checked(frame.with_columns(CURVE_LABEL.alias("curve")), "tau points")


@dataclass(frozen=True)
class TauCurves:
    """The fits of the selected runs' curves (pipelines.analysis.tau.curves.fit_curves_with_bands:
    the fits `fit` computes), the fitted line with its pointwise interval per chunk index from
    the same fit, and the points with their residuals from the line."""

    fits: pl.DataFrame
    band: pl.DataFrame
    points: pl.DataFrame


def tau_curves(
    con: duckdb.DuckDBPyConnection, run_ids: list[str], level: float = LEVEL
) -> TauCurves:
    """Fit every curve of the selected runs and add the line's interval band and residuals."""
    from pipelines.analysis.tau.curves import fit_curves_with_bands

    raw, _ = load_tau_points(con, segment=False)
    raw = raw.filter(pl.col("run_id").is_in(run_ids) & ~pl.col("is_partial"))
    points = tau_points(con, run_ids)
    if raw.is_empty():
        empty = pl.DataFrame()
        return TauCurves(empty, empty, points)
    # one fit per curve: the verdicts and the band come from the same line models
    fitted = fit_curves_with_bands(raw, level=level)
    fits = fitted.fits.with_columns(CURVE_LABEL.alias("curve"))
    band = fitted.bands
    if band.height:
        band = band.with_columns(
            *(pl.col(f"{c}_ns") / 1e6 for c in ("fit", "lo", "hi")),
            CURVE_LABEL.alias("curve"),
        ).rename({"fit_ns": "fit_ms", "lo_ns": "lo_ms", "hi_ns": "hi_ms"})
        points = points.join(
            band.select("curve", "chunk_idx", "fit_ms"), on=["curve", "chunk_idx"], how="left"
        ).with_columns((pl.col("tau_ms") - pl.col("fit_ms")).alias("resid_ms"))
        band = band.join(run_mean_by_chunk(points, level), on=["curve", "chunk_idx"], how="left")
    return TauCurves(fits, _checked(band, "tau band"), points)


def run_mean_by_chunk(points: pl.DataFrame, level: float = LEVEL) -> pl.DataFrame:
    """Per curve and chunk index, the mean of the runs' points (n_runs, mean_ms) with its
    Student-t `level` interval over runs (mean_lo_ms, mean_hi_ms; null with one run): the curve's
    own shape, drawn against the fitted line so that a bend shows as a gap."""
    summary = points.group_by("curve", "chunk_idx").agg(
        pl.len().alias("n"),
        pl.col("tau_ms").mean().alias("mean"),
        pl.col("tau_ms").std().alias("sd"),
    )
    return _with_interval(summary, level).select(
        "curve",
        "chunk_idx",
        pl.col("n").alias("n_runs"),
        pl.col("mean").alias("mean_ms"),
        pl.col("lo").alias("mean_lo_ms"),
        pl.col("hi").alias("mean_hi_ms"),
    )


# ---- schedule timelines ---------------------------------------------------------------------


def timeline_workload(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> dict | None:
    """The workload (model, seq_len, chunk_size on one hardware, read by one reader) among the
    selected runs and their reruns with
    chunks under the most schedules, and one run per schedule (a measured run before a rerun,
    then the first by id). `model` is the configuration's (stg_run_configuration): an untagged
    run is a workload of its own."""
    ids = with_replays(con, run_ids)
    frame = _query(
        con,
        "int_run_workload",
        "select run_id, model, seq_len, chunk_size, hardware, source, schedule, is_replay"
        " from rel where run_id in (select run_id from ids) and schedule is not null"
        " and has_chunks",
        ids,
    )
    if frame.is_empty():
        return None
    best = (
        frame.group_by(TIMELINE_WORKLOAD)
        .agg(pl.col("schedule").n_unique().alias("n_schedules"), pl.len().alias("n_runs"))
        .sort(
            ["n_schedules", "n_runs", *TIMELINE_WORKLOAD],
            descending=[True, True] + [False] * len(TIMELINE_WORKLOAD),
        )
        .row(0, named=True)
    )
    chosen = (
        frame.filter(*(pl.col(c).eq_missing(best[c]) for c in TIMELINE_WORKLOAD))
        .sort("schedule", "is_replay", "run_id")
        .unique("schedule", keep="first", maintain_order=True)
    )
    return {
        **{c: best[c] for c in TIMELINE_WORKLOAD},
        "runs": dict(chosen.select("schedule", "run_id").iter_rows()),
    }


def timeline_spans(
    con: duckdb.DuckDBPyConnection, runs_by_schedule: dict[str, str], max_rows: int = MAX_CHART_ROWS
) -> pl.DataFrame:
    """Chunk and bubble spans (ms from each run's start; sql/marts/fct_schedule_timeline.sql) of
    one run per schedule, in the paper's schedule order; each run keeps its first
    max_rows / runs spans by start time (`truncated` marks a run that had more)."""
    order = {s: i for i, s in enumerate(TIMELINE_SCHEDULES)}
    schedules = sorted(runs_by_schedule, key=lambda s: (order.get(s, len(order)), s))
    per_run = max(1, max_rows // max(len(schedules), 1))
    # one span more than kept per run: a run that has it is truncated
    frame = (
        _query(
            con,
            "fct_schedule_timeline",
            "select * from rel where run_id in (select run_id from ids) qualify row_number()"
            f" over (partition by run_id order by start_ms, kind) <= {per_run + 1:d}"
            " order by run_id, start_ms, kind",
            list(runs_by_schedule.values()),
        )
        .with_columns(
            (pl.len().over("run_id") > per_run).alias("truncated"),
            pl.int_range(pl.len()).over("run_id").alias("_position"),
        )
        .filter(pl.col("_position") < per_run)
        .drop("_position")
        .sort("run_id", "rank", "start_ms", maintain_order=True)
    )
    schedule_of = {run_id: s for s, run_id in runs_by_schedule.items()}
    return frame.with_columns(
        pl.col("run_id").replace_strict(schedule_of).alias("schedule"),
        pl.col("run_id")
        .replace_strict({r: order.get(s, len(order)) for r, s in schedule_of.items()})
        .alias("schedule_order"),
        pl.when(pl.col("kind") == "chunk")
        .then(pl.format("rank {} · vs {}", "rank", "vstage"))
        .otherwise(pl.format("rank {} · idle", "rank"))
        .alias("lane"),
        (pl.col("end_ms") - pl.col("start_ms")).alias("dur_ms"),
    ).filter(pl.col("schedule").is_in(schedules))


# ---- step breakdown -------------------------------------------------------------------------

BREAKDOWN_PARTS = ("computing", "exposed_comm", "recv_wait", "free")


def rank_breakdown(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pl.DataFrame:
    """Per run, rank and part (computing, exposed comm, recv_wait, free): ms summed over the
    rank's steps from the one preferred breakdown row per step (sql/marts/
    fct_rank_time_split.sql); long format, one row per part."""
    wide = _query(
        con,
        "fct_rank_time_split",
        "select * from rel where run_id in (select run_id from ids) order by run_id, rank",
        run_ids,
    )
    if wide.is_empty():
        return pl.DataFrame()
    long = wide.unpivot(
        index=["run_id", "rank", "n_steps", "origin", "window_ns"],
        on=[f"{p}_ns" for p in BREAKDOWN_PARTS],
        variable_name="part",
        value_name="ns",
    ).with_columns(
        pl.col("part").str.strip_suffix("_ns"),
        (pl.col("ns") / 1e6).alias("ms"),
        (pl.col("window_ns") / 1e6).alias("window_ms"),
    )
    order = {p: i for i, p in enumerate(BREAKDOWN_PARTS)}
    long = long.with_columns(pl.col("part").replace_strict(order).alias("part_order"))
    return _checked(long.drop("ns", "window_ns"), "rank breakdown")


# ---- run metrics: schedule comparison, trends, replay vs measured ---------------------------

RUN_METRICS = ("ttft", "computing", "exposed_comm", "bubble", "recv_wait", "p2p_bubble", "free")


def run_metrics(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pl.DataFrame:
    """One row per run: configuration, TTFT and the rank-mean time split, in ms
    (sql/marts/fct_run_time_split.sql), with `bubble` = idle + pipeline wait as compare and
    regressions show it (fct_run_metrics) and `recv_wait` = the profiler's receive wait (the time
    split's recv_wait_ns; docs/metrics.md "Names")."""
    frame = _query(
        con,
        "fct_run_time_split",
        "select * from rel where run_id in (select run_id from ids) order by run_id",
        run_ids,
    )
    bubble = _query(
        con,
        "fct_run_metrics",
        "select run_id, bubble_ns from rel where run_id in (select run_id from ids)",
        run_ids,
    )
    frame = frame.join(bubble, on="run_id", how="left")
    return frame.with_columns((pl.col(f"{m}_ns") / 1e6).alias(f"{m}_ms") for m in RUN_METRICS).drop(
        [f"{m}_ns" for m in RUN_METRICS]
    )


def _with_interval(frame: pl.DataFrame, level: float) -> pl.DataFrame:
    bounds = [t_interval(m, s, n, level) for m, s, n in frame.select("mean", "sd", "n").rows()]
    return frame.with_columns(
        pl.Series("lo", [b[0] for b in bounds], dtype=pl.Float64),
        pl.Series("hi", [b[1] for b in bounds], dtype=pl.Float64),
    ).with_columns(pl.col("lo", "hi").fill_nan(None))


def schedule_summary(
    con: duckdb.DuckDBPyConnection,
    run_ids: list[str],
    parts: tuple[str, ...] = ("computing", "bubble", "exposed_comm"),
    level: float = LEVEL,
) -> pl.DataFrame:
    """Per workload x schedule x part: n runs (repeats), mean ms, sd, Student-t `level`
    interval of the mean (lo, hi; null with one run). Measured runs only, and only workloads
    run under at least two schedules (a comparison needs two). The parts are the
    metrics `tracereplay schedules` compares (sql/marts/fct_run_metrics.sql, docs/metrics.md:
    bubble = idle + pipeline wait over the run's window, run_bubble_ns), so the chart and the
    command show the same numbers."""
    runs = _query(
        con,
        "fct_run_metrics",
        "select run_id, replay_of, schedule, seq_len, chunk_size, pp, vp, hardware, source,"
        " compute_ns / 1e6 as computing_ms, run_bubble_ns / 1e6 as bubble_ms,"
        " exposed_comm_ns / 1e6 as exposed_comm_ms"
        " from rel where run_id in (select run_id from ids) order by run_id",
        run_ids,
    ).filter(pl.col("replay_of").is_null() & pl.col("schedule").is_not_null())
    configuration = queries.run_configuration(con, runs["run_id"].to_list())
    runs = runs.join(configuration.select("run_id", "model"), on="run_id", how="left")
    if runs.is_empty():
        return pl.DataFrame()
    # a workload: the trend's facts but the schedule, and the reader (source)
    workload = [trend_config({**row, "schedule": None}) for row in runs.to_dicts()]
    runs = runs.with_columns(
        pl.Series("workload", workload, dtype=pl.String)
        + pl.format(" ({})", "source").fill_null("")
    )
    long = runs.unpivot(
        index=["workload", *WORKLOAD, "schedule", "run_id"],
        on=[f"{p}_ms" for p in parts],
        variable_name="part",
        value_name="ms",
    ).with_columns(pl.col("part").str.strip_suffix("_ms"))
    summary = (
        long.drop_nulls("ms")
        .group_by(["workload", "schedule", "part"])
        .agg(pl.len().alias("n"), pl.col("ms").mean().alias("mean"), pl.col("ms").std().alias("sd"))
        .sort(["workload", "schedule", "part"])
        .filter(pl.col("schedule").n_unique().over("workload") >= 2)
    )
    return _checked(_with_interval(summary, level), "schedule summary")


TREND_KEYS = ("model", "schedule", "seq_len", "chunk_size", "pp", "vp", "hardware")
"""A trend's configuration: the run facts change-point detection groups by
(pipelines.analysis.runs.run_metrics.CONFIG_KEYS; tp is not among the run metrics' columns), so
runs on other hardware are never one line; the reader (`source`) is added by trend_label."""
TAG_HINT = "tracereplay ingest DIR --tag model=NAME --tag schedule=cpp"


def trend_config(facts: dict) -> str:
    """'m · cpp · seq 65536 · chunk 16384 · pp2 · A100': the known facts of TREND_KEYS, unknown
    ones left out (never 'None' or 'null'); the label of a trend line and of its change points."""
    names = {"seq_len": "seq {}", "chunk_size": "chunk {}", "pp": "pp{}", "vp": "vp{}"}
    return " · ".join(
        names.get(key, "{}").format(facts[key]) for key in TREND_KEYS if facts.get(key) is not None
    )


def trend_label(facts: dict) -> str:
    """trend_config and the reader that produced the runs, 'm · cpp · pp2 (kineto)': runs of one
    workload read from two profilers' exports are two lines, never one
    (pipelines/vocabulary/configuration.py)."""
    label = trend_config(facts)
    return f"{label} ({facts['source']})" if facts.get("source") is not None else label


def untagged_runs(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> int:
    """How many of the measured runs lack a model fact (sql/staging/stg_run_configuration.sql):
    a configuration each, so never trended or compared with another run until tagged alike."""
    configuration = queries.run_configuration(con, run_ids)
    return configuration.filter(pl.col("is_untagged") & ~pl.col("is_replay")).height


def metric_history(
    con: duckdb.DuckDBPyConnection,
    run_ids: list[str],
    metric: str = "ttft",
    level: float = LEVEL,
    min_nights: int = MIN_NIGHTS,
) -> pl.DataFrame:
    """One metric over the nights per configuration (`nightly`), from the selected runs'
    metrics (sql/marts/fct_run_metrics.sql). Measured runs with a collection time and a model
    fact only: an untagged run is a configuration of its own (stg_run_configuration), one run
    is no history, and runs of unknown workloads are never joined into one line."""
    untagged = con.execute("select run_id from stg_run_configuration where is_untagged").fetchall()
    runs = run_metrics(con, run_ids).filter(
        pl.col("replay_of").is_null()
        & pl.col("collected_at").is_not_null()
        & ~pl.col("run_id").is_in([r[0] for r in untagged])
    )
    return nightly(runs, metric, level, min_nights)


def nightly(
    runs: pl.DataFrame, metric: str, level: float = LEVEL, min_nights: int = MIN_NIGHTS
) -> pl.DataFrame:
    """Per configuration (trend_config of the TREND_KEYS the frame has) and night (calendar day
    of collected_at): n runs that night, mean of `<metric>_ms`, Student-t `level` interval of the
    mean over that night's repeats. Only configurations with runs on at least `min_nights`
    nights: a grid run collected once has no history (it would be one dot and one legend entry
    among the trends). Empty frame when nothing qualifies."""
    column = f"{metric}_ms"
    if runs.is_empty() or runs.get_column(column).is_null().all():
        return pl.DataFrame()
    keys = [k for k in (*TREND_KEYS, "source") if k in runs.columns]
    runs = runs.drop_nulls(column)
    labels = [trend_label(row) for row in runs.select(keys).to_dicts()]
    history = (
        runs.with_columns(
            pl.col("collected_at").dt.date().alias("night"),
            pl.Series("config", labels, dtype=pl.String),
        )
        .group_by("config", "night")
        .agg(
            pl.len().alias("n"),
            pl.col(column).mean().alias("mean"),
            pl.col(column).std().alias("sd"),
            pl.col("collected_at").max().alias("collected_at"),
        )
        .filter(pl.len().over("config") >= min_nights)
        .sort("config", "night")
        .with_columns(pl.lit(metric).alias("metric"))
    )
    if history.is_empty():
        return pl.DataFrame()
    return _checked(_with_interval(history, level), "metric history")


def replay_pairs(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pl.DataFrame:
    """Each rerun of a selected run (replay_of set) against the measured runs of the same
    workload and schedule: metric (ttft, bubble, recv_wait), predicted ms (the rerun),
    measured mean ms over n measured runs with their min and max."""
    metrics = run_metrics(con, with_replays(con, run_ids))
    replays = metrics.filter(pl.col("replay_of").is_not_null())
    measured = metrics.filter(pl.col("replay_of").is_null())
    if replays.is_empty() or measured.is_empty():
        return pl.DataFrame()
    rows = []
    for metric in ("ttft", "bubble", "recv_wait"):
        column = f"{metric}_ms"
        observed = (
            measured.drop_nulls(column)
            .group_by([*WORKLOAD, "schedule"])
            .agg(
                pl.len().alias("n_measured"),
                pl.col(column).mean().alias("measured_ms"),
                pl.col(column).min().alias("measured_min_ms"),
                pl.col(column).max().alias("measured_max_ms"),
            )
        )
        pairs = replays.drop_nulls(column).join(observed, on=[*WORKLOAD, "schedule"])
        rows.append(
            pairs.select(
                "run_id",
                "replay_of",
                *WORKLOAD,
                "schedule",
                pl.lit(metric).alias("metric"),
                pl.col(column).alias("predicted_ms"),
                "measured_ms",
                "measured_min_ms",
                "measured_max_ms",
                "n_measured",
            )
        )
    return _checked(pl.concat(rows), "replay pairs")


# ---- freshness ------------------------------------------------------------------------------


def freshness(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> dict:
    """Runs selected, first and last collection time and last ingest time among them."""
    return queries.run_freshness(con, run_ids)


# ---- change points -------------------------------------------------------------------------


def change_point_frame(changes: list) -> pl.DataFrame:
    """The change points as dashboards.trends wants them: config, metric, collected_at,
    direction (up / down) per trend metric (ttft_ns -> ttft), and the 95 % interval of the first
    night after the change (earliest_at, latest_at)."""
    rows = [
        {
            "config": trend_label(dict(c.config)),
            "metric": c.metric.removesuffix("_ns"),
            "collected_at": c.collected_after,
            "direction": "up" if c.magnitude > 0 else "down",
            "earliest_at": c.earliest_after_at,
            "latest_at": c.latest_after_at,
        }
        for c in changes
    ]
    columns = ("config", "metric", "collected_at", "direction", "earliest_at", "latest_at")
    return pl.DataFrame(rows, schema=dict.fromkeys(columns, pl.String))
