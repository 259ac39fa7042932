"""Which host slice launched a device slice: the launch anchor that step attribution (the step
breakdown, pipelines/ingest/steps/step_breakdown.py) and chunk segmentation (pipelines/analysis/
segment.py) both use, so that the two agree on every trace.

A device slice is linked to every host slice that carries an equal value under one of the
`LINK_KEYS` in its args: the flow events a reader bound (`flow_links`: torch_npu's
`torch_to_npu` and `HostToDevice`), torch_npu's `connection_id`, Kineto's `correlation` (the CUDA
runtime launch call and the kernel it launched) and Kineto's `External id` (the ATen operator and
its kernels). The keys are tried in that order and the first that links decides (an `External
id` is not unique in every schema: the 2021 traces and ROCm traces reuse it across steps, which
pulled kernels back into earlier steps); within it the anchor is the start of the earliest
linked host slice: the operator that asked for the work, ahead of the runtime call.
A device slice without a link keeps its own start (the start-time fallback, stated wherever a
figure used it).
"""

from __future__ import annotations

import polars as pl

from pipelines.ingest.steps.flows import FLOW_LINKS_KEY

LINK_KEYS = (FLOW_LINKS_KEY, "connection_id", "correlation", "External id")
"""args keys whose equal values link a host launch slice to the device slices it launched
(`flow_links` holds a JSON list: every flow bound to the slice, pipelines/ingest/steps/flows.py)."""

ANCHOR_SCHEMA: dict[str, pl.DataType] = {"row_id": pl.UInt32, "host_ns": pl.Int64}

LINK_BATCH_ROWS = 262_144
"""Rows of host or device slices whose link ids `launch_anchors` parses at a time."""

LIST_KEYS = {"connection_id": "connection_ids"}
"""A key whose ids a host slice may also list under a second key: torch_npu's SQLite export
gives a framework op that launched several tasks all their ids (PYTORCH_API.connectionId ->
CONNECTION_IDS), which the reader writes as the list `connection_ids`."""


def link_ids(frame: pl.DataFrame, keys: tuple[str, ...] = LINK_KEYS) -> pl.DataFrame:
    """Long frame (row_id, link) of every link id present in args, as 'key=value' strings."""
    if frame.is_empty() or not keys:
        return pl.DataFrame(schema={"row_id": pl.UInt32, "link": pl.String})
    parts = []
    for key in keys:
        # only rows whose args name the key are parsed (a substring test is far cheaper)
        frame_key = frame.filter(pl.col("args").str.contains(f'"{key}"', literal=True))
        value = pl.col("args").str.json_path_match(f"$['{key}']")
        if key == FLOW_LINKS_KEY:
            listed = _flow_link_lists(frame_key, value).filter(pl.col("link").str.starts_with("["))
            part = listed.with_columns(pl.col("link").str.json_decode(pl.List(pl.String))).explode(
                "link"
            )
            part = part.with_columns((pl.lit(f"{key}=") + pl.col("link")).alias("link"))
        else:
            part = frame_key.select("row_id", (pl.lit(f"{key}=") + value).alias("link"))
        parts.append(part.select(pl.col("row_id").cast(pl.UInt32), "link"))
        if key in LIST_KEYS:
            parts.append(_listed(frame, key, LIST_KEYS[key]))
    return pl.concat(parts).drop_nulls("link")


_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_APPENDED_LINKS = rf'^"{FLOW_LINKS_KEY}":(\[(?:{_JSON_STRING}(?:,{_JSON_STRING})*)?\])\}}$'
"""The tail `"flow_links":[...]}` that `flows.merge_links` appends to an args object: a list of
JSON strings closing the object at the end of the text."""


def _flow_link_lists(frame: pl.DataFrame, value: pl.Expr) -> pl.DataFrame:
    """(row_id, link: the JSON list text under `flow_links`) of `frame`'s rows, in their order:
    the tail `merge_links` appended where there is one, else the JSON path `value`, evaluated
    on the other rows only."""
    appended = frame.select("row_id", "args", _appended_links().alias("link"))
    tail_read = appended.get_column("link").is_not_null()
    if tail_read.all():
        return appended.drop("args")
    appended = appended.with_row_index("_position")
    rest = appended.filter(~tail_read).select("_position", "row_id", value.alias("link"))
    read = appended.filter(tail_read).drop("args")
    return pl.concat([read, rest]).sort("_position").drop("_position")


def _appended_links() -> pl.Expr:
    """The JSON list text of the flow links that `flows.merge_links` appended to args, read from
    the args' tail: the key found by a substring search and only the text after it matched,
    where `json_path_match` parses the whole args (call stacks of ~1 KB on a torch_npu host
    slice: 0.18-0.22 s CPU for the 178,200 linked host slices of the 500 MB bench trace). Null
    (the JSON path decides, as before) where args name the key more than once (an export's own
    `flow_links` beside the one appended: the JSON path reads the last) or the tail is not a
    list of strings closing the text. Args are
    a reader's JSON serialisation, so a key followed by the object's closing brace at the end of
    the text is a key of the top-level object, which `$['flow_links']` reads too."""
    args = pl.col("args")
    key = f'"{FLOW_LINKS_KEY}":'
    tail = args.str.slice(args.str.find(key, literal=True))
    once = args.str.count_matches(f'"{FLOW_LINKS_KEY}"', literal=True) == 1
    return pl.when(once).then(tail.str.extract(_APPENDED_LINKS, 1))


def _listed(frame: pl.DataFrame, key: str, list_key: str) -> pl.DataFrame:
    """(row_id, 'key=value') for every id in the JSON list under `list_key`."""
    rows = frame.filter(pl.col("args").str.contains(f'"{list_key}"', literal=True))
    listed = rows.select(
        "row_id", pl.col("args").str.json_path_match(f"$['{list_key}']").alias("link")
    ).filter(pl.col("link").str.starts_with("["))
    ids = listed.with_columns(pl.col("link").str.json_decode(pl.List(pl.Int64))).explode("link")
    return ids.select(
        pl.col("row_id").cast(pl.UInt32),
        (pl.lit(f"{key}=") + pl.col("link").cast(pl.String)).alias("link"),
    )


def host_link_starts(
    host: pl.DataFrame, keys: tuple[str, ...] = LINK_KEYS, by: tuple[str, ...] = ("rank",)
) -> dict[str, pl.DataFrame]:
    """Per key of `keys`, the earliest start of the host slices carrying each link id:
    (*by, link, start_ns), one row per id, so an id that many host slices share (ids repeated
    per copy) never joins many-to-many with the device slices. `host` has row_id, start_ns,
    args and the columns `by`. The starts of two parts of one host set combine by their minimum
    (`launch_anchors` of a run read in batches, pipelines/analysis/chunks/segment_batches.py)."""
    starts = {}
    for key in keys:
        starts[key] = (
            link_ids(host, (key,))
            .join(host.select(pl.col("row_id").cast(pl.UInt32), *by, "start_ns"), on="row_id")
            .group_by([*by, "link"])
            .agg(pl.col("start_ns").min())
        )
    return starts


def anchors_from_starts(
    device: pl.DataFrame,
    starts: dict[str, pl.DataFrame],
    keys: tuple[str, ...] = LINK_KEYS,
    by: tuple[str, ...] = ("rank",),
) -> pl.DataFrame:
    """(row_id, host_ns) for every device slice linked to a host slice of `starts`
    (`host_link_starts`): the keys in order, the first that links a device slice decides, and
    host_ns = the earliest start among the host slices it links to."""
    found = [pl.DataFrame(schema=ANCHOR_SCHEMA)]
    for key in keys:  # in order: the first key that links a device slice decides its anchor
        if device.is_empty():
            break
        device_links = link_ids(device, (key,)).join(
            device.select(pl.col("row_id").cast(pl.UInt32), *by), on="row_id"
        )
        linked = (
            device_links.join(starts[key], on=[*by, "link"], suffix="_host")
            .group_by("row_id")
            .agg(pl.col("start_ns").min().cast(pl.Int64).alias("host_ns"))
        )
        found.append(linked)
        device = device.filter(~pl.col("row_id").cast(pl.UInt32).is_in(linked["row_id"].implode()))
    return pl.concat(found)


def launch_anchors(
    device: pl.DataFrame,
    host: pl.DataFrame,
    keys: tuple[str, ...] = LINK_KEYS,
    by: tuple[str, ...] = ("rank",),
) -> pl.DataFrame:
    """(row_id, host_ns) for every device slice linked to a host slice: host_ns = the start of
    the earliest linked host slice. `device` and `host` have row_id, start_ns, args and the
    columns `by` (links only join within equal `by` values, e.g. one rank)."""
    by = tuple(c for c in by if c in device.columns and c in host.columns)
    if device.is_empty() or host.is_empty():
        return pl.DataFrame(schema=ANCHOR_SCHEMA)
    # a part of the rows at a time: the link ids parsed from args (strings, several per row)
    # exist for one part only (the streamed read of a marked 4 GB trace peaked here)
    starts: dict[str, pl.DataFrame] = {}
    for offset in range(0, host.height, LINK_BATCH_ROWS):
        part = host_link_starts(host.slice(offset, LINK_BATCH_ROWS), keys, by)
        starts = {k: combine_link_starts(starts.get(k), part[k], by) for k in keys}
    return pl.concat(
        anchors_from_starts(device.slice(offset, LINK_BATCH_ROWS), starts, keys, by)
        for offset in range(0, device.height, LINK_BATCH_ROWS)
    )


def combine_link_starts(
    first: pl.DataFrame | None, second: pl.DataFrame, by: tuple[str, ...] = ("rank",)
) -> pl.DataFrame:
    """The link starts (`host_link_starts` of one key) of two parts of a host set, as one: the
    earlier start of each id."""
    if first is None:
        return second
    return pl.concat([first, second]).group_by([*by, "link"]).agg(pl.col("start_ns").min())
