"""The segments of a configuration's nightly history between its confirmed change points, so that
a tau_k fit pools only runs of one side of a change.

Twenty runs before a confirmed change and ten after it are not repeats of one curve: pooled,
they give one slope that is neither side's (issue 33). Each configuration whose history holds a
confirmed change point (pipelines.analysis.changes.history.find_changes: status `confirmed` and
within the false-discovery control across series) has its runs split at the first run after
each change; the tau_k fit takes the segment as one more curve key (SEGMENTED_CURVE_KEYS), so
it fits one curve per segment. A change found on several metrics of a configuration (TTFT and
makespan move together) within MERGE_RUNS runs of each other is one split, at the earliest.
Runs of a configuration without a confirmed change have the segment "" (one curve, as before).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import duckdb
import polars as pl

from pipelines.analysis.changes.changepoint_defaults import DEFAULT_FDR, DEFAULT_MIN_SEGMENT
from pipelines.analysis.tau.curve_keys import CONFIG_KEYS
from pipelines.selectors import SelectorError
from pipelines.store import Session, queries
from pipelines.vocabulary.configuration import RUN_CONFIG_KEYS

SEGMENT = "segment"
SEGMENTED_CURVE_KEYS = (*CONFIG_KEYS, SEGMENT, "vstage")
"""The curve keys of a fit that respects change points: a curve = configuration x segment x
virtual stage."""
MERGE_RUNS = 2
"""Splits of one configuration at most this many runs apart are the same change."""


def is_confirmed(change) -> bool:
    """A confirmed point within the false-discovery control (a NaN q: not computed)."""
    q = change.q_value
    return change.status == "confirmed" and (math.isnan(q) or q <= DEFAULT_FDR)


def segment_labels(history: Sequence[tuple[str, object]], first_after: Sequence[str]) -> dict:
    """{run_id: segment} of one configuration's runs (run_id, collected_at), oldest first,
    split before each run of `first_after` (the first run after a change): "" without a split,
    else "i/n from YYYY-MM-DD" (segment i of n, the date of its first run)."""
    order = {run: i for i, (run, _) in enumerate(history)}
    starts: list[int] = []
    for index in sorted(order[r] for r in set(first_after) if r in order and order[r] > 0):
        if not starts or index - starts[-1] > MERGE_RUNS:
            starts.append(index)
    if not starts:
        return {run: "" for run, _ in history}
    bounds = [0, *starts, len(history)]
    labels = {}
    for i in range(len(bounds) - 1):
        first = history[bounds[i]][1]
        label = f"{i + 1}/{len(bounds) - 1} from {str(first)[:10]}"
        labels.update({run: label for run, _ in history[bounds[i] : bounds[i + 1]]})
    return labels


def change_segments(con: duckdb.DuckDBPyConnection, changes: Sequence) -> pl.DataFrame:
    """run_id, segment of every run of the configurations with a confirmed change in `changes`
    (HistoryChange rows); empty when none is confirmed."""

    splits: dict[tuple, list[str]] = {}
    configs: dict[tuple, dict] = {}
    for change in changes:
        if is_confirmed(change):
            key = tuple(sorted(change.config.items(), key=lambda item: item[0]))
            splits.setdefault(key, []).append(change.run_after)
            configs[key] = dict(change.config)
    rows: list[dict[str, str]] = []
    for key, first_after in splits.items():
        history = queries.config_run_history(con, configs[key])
        labels = segment_labels([(run, at) for run, at in history], first_after)
        rows += [{"run_id": run, SEGMENT: label} for run, label in labels.items()]
    return pl.DataFrame(rows, schema={"run_id": pl.String, SEGMENT: pl.String})


def with_segments(points: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """The tau_k points with a `segment` column: the run's segment, "" for runs of a
    configuration without a confirmed change (and for operator-latency tables)."""
    if SEGMENT in points.columns:
        points = points.drop(SEGMENT)
    if segments.is_empty() or "run_id" not in points.columns:
        return points.with_columns(pl.lit("", pl.String).alias(SEGMENT))
    joined = points.join(segments.unique("run_id"), on="run_id", how="left")
    return joined.with_columns(pl.col(SEGMENT).fill_null(""))


def may_split(con: Session | duckdb.DuckDBPyConnection, points: pl.DataFrame) -> bool:
    """Whether a confirmed change point can split any run of `points`: False when every
    configuration of their runs has fewer than 2 x DEFAULT_MIN_SEGMENT measured runs with a
    collection time (replays left out; copies counted, so this bounds find_changes' series from
    above), since a shorter series cannot hold a confirmed point (detect_change_points' gate
    needs 2 x min_segment values and its tail points are pending). Reads the configuration,
    collected_at and replay_of of every run only (Session.run_facts: a lake's identity catalog,
    no Parquet file; a DuckDB file's `runs` table), not the metric marts the whole scan needs."""
    if points.is_empty() or "run_id" not in points.columns:
        return False
    keys = list(RUN_CONFIG_KEYS)
    if isinstance(con, Session):
        runs = con.run_facts()
    else:
        runs = queries.run_columns(con, None, [*keys, "collected_at", "replay_of"])
    measured = runs.filter(pl.col("replay_of").is_null() & pl.col("collected_at").is_not_null())
    counts = measured.group_by(keys).len("measured")
    wanted = runs.filter(pl.col("run_id").is_in(points["run_id"].unique().implode()))
    wanted = wanted.select(keys).unique()
    reach = wanted.join(counts, on=keys, how="inner", nulls_equal=True)
    return bool((reach["measured"] >= 2 * DEFAULT_MIN_SEGMENT).any())


def segment_points(con: Session | duckdb.DuckDBPyConnection, points: pl.DataFrame) -> pl.DataFrame:
    """with_segments of the points and the confirmed change points of the whole warehouse's
    nightly history (find_changes over every collected run; none when there is no history).
    The whole scan runs only when some configuration of the points has history enough to hold
    a confirmed point (`may_split`): the points' segments are the same either way, and the
    Benjamini-Hochberg family of the scan stays the whole warehouse's when it runs."""
    from pipelines.analysis.changes.history import find_changes

    if not may_split(con, points):
        return with_segments(points, pl.DataFrame())
    if isinstance(con, Session):
        con = con.con  # the scan reads the connection, as before
    try:
        scan = find_changes(con, build=False, withdrawn=False)
    except SelectorError:  # no collected runs: no history to split
        return with_segments(points, pl.DataFrame())
    return with_segments(points, change_segments(con, scan.changes))
