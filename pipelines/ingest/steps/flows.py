"""Flow events (`ph` s / f) of a Chrome-format trace -> links between the slices they join.

torch_npu links each host operator to the device task it launched with a `torch_to_npu` flow
(cat `async_npu`: `s` on the Python `cpu_op`, `f` on the Ascend Hardware task, both `bp: "e"`)
and the CANN launch to the task with a `HostToDevice` flow (docs/ascend_formats.md §3.4). The
two ends of one flow have the same `cat` and `id` (the id is kept as its JSON text, digits
exact: torch_npu writes 19-digit ids that a double cannot hold).

Binding points (Chrome trace event format, "Flow events"; the rule Perfetto's JSON importer
follows): an `s` binds to the enclosing slice of its thread (same pid and tid) at its `ts`; an
`f` binds to the enclosing slice when it has `bp: "e"`, otherwise to the next slice of its
thread starting at or after its `ts`. Enclosing = the innermost complete event with
start <= ts < end (or start == ts for a zero-length one). Flow steps (`t`) and flows whose
other end is missing or binds to no slice give no link.

A slice bound to a flow end gets the link `<cat>:<id>` in its args under `flow_links` (a JSON
list: a host op may start several flows); the chunk segmentation anchors device work at the
host slice sharing such a link (pipelines/analysis/chunks/segment.py).

Memory: the flows and one row per slice of a thread that has flow ends (row, start, end) are
held, not the args: on the 500 MB bench trace about 0.23 M flow events against 1.0 M slices.
"""

from __future__ import annotations

import polars as pl

from pipelines.ingest.lookups import left_lookup

FLOW_LINKS_KEY = "flow_links"
"""The args key under which a slice carries the links of the flows bound to it."""

ROW = "_row"
FLOW_PHASES = ("s", "f")

FLOW_SCHEMA: dict[str, pl.DataType] = {
    "ph": pl.String,
    "pid": pl.String,
    "tid": pl.String,
    "start_ns": pl.Int64,
    "category": pl.String,
    "flow_id": pl.String,
    "bp": pl.String,
}
LINK_SCHEMA: dict[str, pl.DataType] = {ROW: pl.UInt32, FLOW_LINKS_KEY: pl.String}


def _thread(frame: pl.DataFrame | pl.LazyFrame):
    return frame.with_columns(
        (pl.col("pid").fill_null("") + "/" + pl.col("tid").fill_null("")).alias("_thread")
    )


def bind(slices: pl.LazyFrame, flows: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Links per slice row and counts.

    slices: a frame with `_row` (a row index), pid, tid, start_ns, dur_ns; flows: FLOW_SCHEMA
    rows. Returns (one row per linked slice: `_row`, `flow_links` as JSON args text
    `{"flow_links": [...]}`; counts: `flows` (pairs with an s and an f), `linked` (pairs bound at
    both ends), `unbound_ends`)."""
    flows = _thread(
        flows.filter(pl.col("start_ns").is_not_null() & pl.col("flow_id").is_not_null())
    )
    flows = _pairwise(
        flows.with_columns(
            (pl.col("category").fill_null("") + ":" + pl.col("flow_id")).alias("link")
        )
    ).with_row_index("_flow")
    pairs = flows.group_by("link").agg(
        (pl.col("ph") == "s").any().alias("has_s"), (pl.col("ph") == "f").any().alias("has_f")
    )
    counts = {"flows": pairs.filter(pl.col("has_s") & pl.col("has_f")).height}
    threads = flows.get_column("_thread").unique().implode()
    candidates = (
        _thread(slices)
        .filter(pl.col("_thread").is_in(threads))
        .select(
            ROW,
            "_thread",
            "start_ns",
            (pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
            "dur_ns",
        )
        .collect()
        # ties on start: the longest first, so that the last one (backward search) is innermost
        .sort(["start_ns", "dur_ns"], descending=[False, True])
    )
    enclosing = (pl.col("ph") == "s") | (pl.col("bp") == "e")
    bound = pl.concat(
        [
            _enclosing(flows.filter(enclosing), candidates),
            _next(flows.filter(~enclosing.fill_null(False)), candidates),
        ]
    )
    both = (
        bound.group_by("link")
        .agg(pl.col("ph").n_unique().alias("ends"))
        .filter(pl.col("ends") == 2)
        .get_column("link")
        .implode()
    )
    linked = bound.filter(pl.col("link").is_in(both))
    counts["linked"] = linked.get_column("link").n_unique()
    counts["unbound_ends"] = flows.height - bound.height
    # each row's distinct links in order, rows in order: sorted once, then grouped in that order
    # (0.07 s at 500 MB against 0.36 s for a unique().sort() per group and a sort after)
    links = (
        linked.select(ROW, "link")
        .unique()
        .sort([ROW, "link"])
        .group_by(ROW, maintain_order=True)
        .agg(pl.col("link").alias(FLOW_LINKS_KEY))
        .select(ROW, pl.struct(FLOW_LINKS_KEY).struct.json_encode().alias(FLOW_LINKS_KEY))
    )
    return links.cast(LINK_SCHEMA), counts


def _pairwise(flows: pl.DataFrame) -> pl.DataFrame:
    """A flow id used by more than one flow (a trace whose events were repeated with their ids,
    an exporter reusing ids) pairs its ends in time order, the i-th `s` with the i-th `f`, as
    link `<cat>:<id>#<i>`: one id never joins every start to every finish (a many-to-many
    binding of thousands of ends each was what ran a 2 GB trace out of memory)."""
    if flows.group_by("link", "ph").len().height == flows.height:
        return flows  # every id used once: no ordinals (ranking them cost ~0.3 s per 500 MB)
    # the ends sorted once by (link, ph, start, position): an end's ordinal is its distance from
    # the first end of its (link, ph) run, the ordinal rank of its start among them (ties in
    # frame order); a windowed rank over (link, ph) cost 0.23 s at 500 MB (273,825 ends), this
    # 0.14 s
    n = pl.int_range(pl.len(), dtype=pl.Int64)
    same = pl.col("link").eq_missing(pl.col("link").shift()) & pl.col("ph").eq_missing(
        pl.col("ph").shift()
    )
    first = pl.when(same.fill_null(False)).then(None).otherwise(n).forward_fill()
    new_link = ~pl.col("link").eq_missing(pl.col("link").shift()).fill_null(False)
    ends = (
        flows.select("link", "ph", "start_ns")
        .with_row_index("_position")
        .sort(["link", "ph", "start_ns", "_position"])
        .with_columns((n - first).alias("_ordinal"), new_link.cum_sum().alias("_link"))
        .with_columns((pl.col("_ordinal").max().over("_link") > 0).alias("_repeated"))
        .sort("_position")
    )
    return flows.with_columns(
        pl.when(ends.get_column("_repeated"))
        .then(pl.col("link") + "#" + ends.get_column("_ordinal").cast(pl.String))
        .otherwise(pl.col("link"))
        .alias("link")
    )


def _enclosing(flows: pl.DataFrame, candidates: pl.DataFrame) -> pl.DataFrame:
    """Flows bound to the innermost slice of their thread holding their ts."""
    if flows.is_empty():
        return pl.DataFrame(
            schema={"_flow": pl.UInt32, "ph": pl.String, "link": pl.String, ROW: pl.UInt32}
        )
    holds = (pl.col("start_ns") <= pl.col("ts")) & (
        (pl.col("ts") < pl.col("end_ns")) | (pl.col("ts") == pl.col("start_ns"))
    )
    # the latest slice starting at or before ts holds it unless it ended before ts (a finished
    # child of the enclosing slice): those few are matched against their whole thread
    left, nearest = _nearest_slice(flows, candidates, "backward")
    direct = nearest.filter(holds)
    rest = left.join(direct.select("_flow"), on="_flow", how="anti")
    fallback = (
        rest.join(candidates, on="_thread")
        .filter(holds)
        .sort(["start_ns", "dur_ns"], descending=[False, True])
        .group_by("_flow", maintain_order=True)
        .last()
    )
    columns = ["_flow", "ph", "link", ROW]
    return pl.concat([direct.select(columns), fallback.select(columns)])


def _nearest_slice(
    flows: pl.DataFrame, candidates: pl.DataFrame, strategy: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Flow ends at `ts` (sorted) and each joined to the nearest slice of its thread starting at
    or before (`backward`) or at or after (`forward`) it."""
    left = flows.select("_flow", "ph", "link", "_thread", pl.col("start_ns").alias("ts")).sort("ts")
    nearest = left.join_asof(
        candidates,
        left_on="ts",
        right_on="start_ns",
        by="_thread",
        strategy=strategy,
        check_sortedness=False,
    )
    return left, nearest


def _next(flows: pl.DataFrame, candidates: pl.DataFrame) -> pl.DataFrame:
    """Flow ends bound to the next slice of their thread starting at or after their ts."""
    _, nearest = _nearest_slice(flows, candidates, "forward")
    return nearest.filter(pl.col(ROW).is_not_null()).select("_flow", "ph", "link", ROW)


def merge_links(frame: pl.DataFrame | pl.LazyFrame, links: pl.DataFrame):
    """`frame` (with `_row` and args) with each linked row's args extended by its flow_links,
    `_row` dropped. A left join with the links in frame order, which a LazyFrame streams
    (pipelines.ingest.lookups). A DataFrame's args are rewritten only at its linked rows (about
    a fifth of the bench trace's slices): the merge expression over every row's args (strip,
    regex, concatenation of ~200 MB per 500 MB trace) cost 0.4-0.7 s CPU, the linked rows alone
    0.2-0.4 s, the same strings."""
    if links.is_empty():
        return frame.drop(ROW)
    if (
        isinstance(frame, pl.DataFrame)
        and frame.height
        and _strictly_ascending(frame.get_column(ROW))
    ):
        return _merged_at_positions(frame, links)
    joined = left_lookup(frame, links.select(ROW, pl.col(FLOW_LINKS_KEY).alias("_extra")), ROW)
    if isinstance(joined, pl.LazyFrame):
        return joined.with_columns(_merged_args().alias("args")).drop(ROW, "_extra")
    linked = joined.get_column("_extra").is_not_null()
    merged = joined.filter(linked).select(_merged_args()).to_series()
    args = joined.get_column("args").scatter(linked.arg_true(), merged)
    return joined.with_columns(args).drop(ROW, "_extra")


def _strictly_ascending(rows: pl.Series) -> bool:
    """Whether the row numbers rise strictly (a row index, or a filtered part of one)."""
    return rows.null_count() == 0 and bool((rows.diff(null_behavior="drop") > 0).all())


def _merged_at_positions(frame: pl.DataFrame, links: pl.DataFrame) -> pl.DataFrame:
    """merge_links of a frame whose `_row` rises strictly: each link's row found by a binary
    search, and only those rows' args gathered, merged and scattered back; the frame itself is
    not joined (the join copied every column of ~1 M slices: 0.3-0.8 s CPU at 500 MB)."""
    rows = frame.get_column(ROW)
    wanted = links.get_column(ROW).cast(rows.dtype)
    positions = rows.search_sorted(wanted, side="left").cast(pl.Int64)
    present = (positions < frame.height) & (
        rows.gather(positions.clip(upper_bound=max(frame.height - 1, 0))) == wanted
    )
    positions = positions.filter(present)
    merged = (
        frame.select(pl.col("args").gather(positions))
        .with_columns(links.get_column(FLOW_LINKS_KEY).filter(present).alias("_extra"))
        .select(_merged_args())
        .to_series()
    )
    args = frame.get_column("args").scatter(positions, merged)
    return frame.with_columns(args).drop(ROW)


def _merged_args() -> pl.Expr:
    """args with the `_extra` links object merged in (args that are no object keep no link)."""
    extra = pl.col("_extra")
    args = pl.col("args").str.strip_chars()
    return (
        pl.when(extra.is_null())
        .then(pl.col("args"))
        .when(pl.col("args").is_null() | args.str.contains(r"^\{\s*\}$"))
        .then(extra)
        .when(args.str.starts_with("{") & args.str.ends_with("}"))
        .then(args.str.head(-1) + "," + extra.str.tail(-1))
        .otherwise(pl.col("args"))  # args that are not an object keep no link
    )
