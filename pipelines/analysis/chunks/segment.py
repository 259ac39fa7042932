"""Chunk segmentation of real traces: host-side chunk markers -> canonical `chunks` rows.

A marker is a host slice (lane ``host``) whose name matches a regex with named groups ``req``,
``k`` and optionally ``vs``, ``tokens``, ``prefix``. The default regex accepts exactly the
form ``chunk[req=<id>,k=<k>,vs=<vstage>,tokens=<c>,prefix=<p>]`` (docs/tau_k.md §1; any order,
``tokens``/``prefix`` optional). Device slices of the same rank belong to the marker that contains
their *anchor* time: the start of the host slice that launched them when a link in ``args`` joins
the two (``flow_links``: the trace's s/f flow events as the reader bound them; ``connection_id``,
``correlation``, ``External id``), otherwise their own start (time containment).
``busy_ns`` of a chunk is the union of its device intervals: tau_k.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Literal

import polars as pl
import regex

from pipelines.analysis.chunks.engine_forwards import (
    ENGINE_FORWARD_RULE,
    forward_markers,
    parse_forward,
)
from pipelines.ingest.frames import SCHEMAS, conform
from pipelines.ingest.steps.launch_links import ANCHOR_SCHEMA, LINK_KEYS, launch_anchors
from pipelines.vocabulary.device_work import (  # noqa: F401  (the rule's constants, re-exported)
    COMM_LINK_KEY,
    EXCLUDED_DEVICE_CATEGORIES,
    NON_WORK_TASK_TYPES,
    work_slices,
)
from pipelines.vocabulary.intervals import length_by

DEFAULT_MARKER_REGEX = (
    r"^chunk\["
    # required keys present, each key at most once
    r"(?=(?:[^\]]*,)?req=)(?=(?:[^\]]*,)?k=)(?=(?:[^\]]*,)?vs=)"
    r"(?!(?:.*(?:\[|,)req=){2})(?!(?:.*(?:\[|,)k=){2})(?!(?:.*(?:\[|,)vs=){2})"
    r"(?!(?:.*(?:\[|,)tokens=){2})(?!(?:.*(?:\[|,)prefix=){2})"
    r"(?:req=(?P<req>[^,\]=\s]+)|k=(?P<k>\d+)|vs=(?P<vs>-?\d+)"
    r"|tokens=(?P<tokens>\d+)|prefix=(?P<prefix>\d+))"
    r"(?:,(?:req=(?P<req2>[^,\]=\s]+)|k=(?P<k2>\d+)|vs=(?P<vs2>-?\d+)"
    r"|tokens=(?P<tokens2>\d+)|prefix=(?P<prefix2>\d+))){2,4}"
    r"\]$"
)
"""Exactly `chunk[req=..,k=..,vs=..(,tokens=..)(,prefix=..)]`, keys in any order, no repeats."""

PROFILER_STEP_REGEX = r"^ProfilerStep#(?P<k>\d+)$"
"""Rule option: each `ProfilerStep#N` window is one chunk (use with renumber=True)."""

BUILTIN_MARKER_REGEXES = (DEFAULT_MARKER_REGEX, PROFILER_STEP_REGEX)
"""The project's own rules: compiled with `re` (no catastrophic backtracking, measured speed)."""

REQUIRED_GROUPS = ("req", "k")
"""Named groups every user-given marker regex must have (`vs`, `tokens`, `prefix` optional)."""

INTEGER_GROUPS = ("k", "vs", "tokens", "prefix")

MATCH_TIMEOUT_S = 5.0
"""Time bound per run for matching a user-given marker regex against the run's host slice names
(the `regex` package's timeout; a catastrophically backtracking pattern raises MarkerRuleError)."""

Pattern = re.Pattern[str] | regex.Pattern


class MarkerRuleError(ValueError):
    """A marker rule that cannot be used: it does not compile, lacks a required named group,
    captures a non-integer k/vs/tokens/prefix, or runs past its time bound. One-line message."""


def compile_marker_regex(marker_regex: str | Pattern) -> Pattern:
    """The compiled marker rule. The built-in rules compile with `re`; any other string with the
    `regex` package (same syntax, and matching can be bounded in time) and must have the named
    groups `req` and `k`. An already compiled pattern is used as it is. Raises MarkerRuleError."""
    if not isinstance(marker_regex, str):
        return marker_regex
    if marker_regex == ENGINE_FORWARD_RULE:  # parsed by engine_forwards, never as a regex
        return re.compile(r"(?!)")
    if marker_regex in BUILTIN_MARKER_REGEXES:
        return re.compile(marker_regex)
    try:
        pattern = regex.compile(marker_regex)
    except (regex.error, re.error) as exc:
        raise MarkerRuleError(f"marker regex {marker_regex!r} does not compile: {exc}") from None
    missing = [g for g in REQUIRED_GROUPS if g not in pattern.groupindex]
    if missing:
        raise MarkerRuleError(
            f"marker regex {marker_regex!r} lacks the named group(s) "
            f"{', '.join(missing)}: it needs (?P<req>...) and (?P<k>...)"
        )
    return pattern


def _shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


UNASSIGNED_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "rank": pl.Int32,
    "device_busy_ns": pl.Int64,
    "assigned_busy_ns": pl.Int64,
    "unassigned_ns": pl.Int64,
    "unassigned_fraction": pl.Float64,
    "n_device_slices": pl.Int64,
    "n_unassigned_slices": pl.Int64,
    "n_markers": pl.Int64,
    "n_empty_markers": pl.Int64,
    "n_flow_linked": pl.Int64,
}

Link = Literal["auto", "time", "flow"]


@dataclass(frozen=True)
class MarkerFields:
    """The fields one marker name carries."""

    request_id: str
    chunk_idx: int | None  # None: k is a label (`label`), ordered by the markers' start
    vstage: int | None
    tokens: int | None
    prefix_tokens: int | None
    label: str | None = None


def parse_marker(
    name: str,
    marker_regex: str | Pattern = DEFAULT_MARKER_REGEX,
    timeout_s: float | None = None,
):
    """The fields of one marker name, or None when it does not match the regex.

    timeout_s bounds the match of a `regex` pattern (TimeoutError past it). A k that is not an
    integer is a label (`attn(F)`): the chunk index is then the label's place in start order
    (`chunk_markers`); a vs, tokens or prefix that is not an integer raises MarkerRuleError."""
    pattern = compile_marker_regex(marker_regex)
    if timeout_s is not None and isinstance(pattern, regex.Pattern):
        match = pattern.match(name, timeout=timeout_s)
    else:
        match = pattern.match(name)
    if match is None:
        return None
    groups = {k: v for k, v in match.groupdict().items() if v is not None}

    def field(key: str) -> str | None:
        return groups.get(key, groups.get(f"{key}2"))

    k = field("k")
    if k is None:
        return None
    vs, tokens, prefix = field("vs"), field("tokens"), field("prefix")
    label = None if _is_int(k) else k
    try:
        return MarkerFields(
            request_id=field("req") or "0",
            chunk_idx=None if label is not None else int(k),
            label=label,
            vstage=None if vs is None else int(vs),
            tokens=None if tokens is None else int(tokens),
            prefix_tokens=None if prefix is None else int(prefix),
        )
    except ValueError:
        key, value = next(
            (key, v)
            for key, v in zip(INTEGER_GROUPS[1:], (vs, tokens, prefix), strict=True)
            if v is not None and not _is_int(v)
        )
        raise MarkerRuleError(
            f"marker regex group {key} captured {_shown(value)} in host slice "
            f"{_shown(name)}: not an integer"
        ) from None


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _parse_markers(
    names: list[str], marker_regex: str | Pattern, match_timeout_s: float | None = None
) -> list[dict]:
    """{"name": ..., **MarkerFields} of every name of `names` the rule matches. A `regex`
    pattern gets match_timeout_s (default MATCH_TIMEOUT_S) for all the names together; past it
    MarkerRuleError."""
    pattern = compile_marker_regex(marker_regex)
    bounded = isinstance(pattern, regex.Pattern)
    budget = MATCH_TIMEOUT_S if match_timeout_s is None else match_timeout_s
    deadline = time.monotonic() + budget
    parsed = []
    for name in names:
        try:
            fields = parse_marker(
                name, pattern, max(deadline - time.monotonic(), 1e-3) if bounded else None
            )
        except TimeoutError:
            raise MarkerRuleError(
                f"marker regex {_shown(pattern.pattern)} ran past its time bound of {budget:g} s "
                f"on the run's {len(names)} host slice names (catastrophic backtracking?)"
            ) from None
        if fields is not None:
            parsed.append({"name": name, **fields.__dict__})
    return parsed


def marker_names(
    names: list[str], marker_regex: str | Pattern, match_timeout_s: float | None = None
) -> list[str]:
    """The host slice names of `names` that `segment_chunks` can take a chunk marker from under
    the rule: those the rule parses (MarkerRuleError as there), and under the default rule or
    ENGINE_FORWARD_RULE the engines' forward annotations (the default rule's fallback). Host
    slices of no other name make no marker, so a caller may leave them out of the slices it
    segments unless their args carry a launch link (`chunk_store.segment_run`)."""
    found = []
    if marker_regex != ENGINE_FORWARD_RULE:
        found = [p["name"] for p in _parse_markers(names, marker_regex, match_timeout_s)]
    if marker_regex in (DEFAULT_MARKER_REGEX, ENGINE_FORWARD_RULE):
        found += [n for n in names if parse_forward(n) is not None]
    return list(dict.fromkeys(found))


def chunk_markers(
    host: pl.DataFrame,
    marker_regex: str | Pattern,
    vstage_of_rank: dict[int, int] | None,
    renumber: bool,
    match_timeout_s: float | None = None,
) -> pl.DataFrame:
    """One row per chunk marker: rank, key fields, host range [m_start, m_end).

    A `regex` pattern gets match_timeout_s (default MATCH_TIMEOUT_S) for all the names together;
    past it MarkerRuleError."""
    if marker_regex == ENGINE_FORWARD_RULE:
        return forward_markers(host, vstage_of_rank).sort("rank", "m_start")
    names = host.get_column("name").unique().to_list()
    parsed = _parse_markers(names, marker_regex, match_timeout_s)
    if not parsed and marker_regex == DEFAULT_MARKER_REGEX:
        # no project markers: the engines' own forward annotations (vLLM, SGLang)
        return forward_markers(host, vstage_of_rank).sort("rank", "m_start")
    schema = {
        "name": pl.String,
        "request_id": pl.String,
        "chunk_idx": pl.Int32,
        "vstage": pl.Int32,
        "tokens": pl.Int64,
        "prefix_tokens": pl.Int64,
        "label": pl.String,
    }
    names = pl.DataFrame(parsed, schema=schema)
    markers = host.join(names, on="name", how="inner").select(
        "rank",
        "request_id",
        "chunk_idx",
        "vstage",
        "tokens",
        "prefix_tokens",
        "label",
        pl.col("start_ns").alias("m_start"),
        (pl.col("start_ns") + pl.col("dur_ns")).alias("m_end"),
    )
    markers = _order_labels(markers)
    fallback = pl.lit(-1, pl.Int32)
    if vstage_of_rank:
        fallback = pl.col("rank").replace_strict(vstage_of_rank, default=-1, return_dtype=pl.Int32)
    markers = markers.with_columns(pl.col("vstage").fill_null(fallback))
    key = ["rank", "request_id", "vstage", "chunk_idx"]
    # the same chunk marked twice (record_function and mstx, or a split range): one span
    markers = (
        markers.group_by(key)
        .agg(
            pl.col("tokens").max(),
            pl.col("prefix_tokens").max(),
            pl.col("m_start").min(),
            pl.col("m_end").max(),
        )
        .with_columns(
            pl.lit(None, pl.Int32).alias("batch_prefills"),
            pl.lit(None, pl.Int32).alias("batch_decodes"),
        )
    )
    if renumber:
        markers = markers.with_columns(
            (pl.col("m_start").rank("ordinal").over(["rank", "request_id", "vstage"]) - 1)
            .cast(pl.Int32)
            .alias("chunk_idx")
        )
    return markers.sort("rank", "m_start")


_OWNER_SCHEMA = {
    "row_id": pl.UInt32,
    "request_id": pl.String,
    "vstage": pl.Int32,
    "chunk_idx": pl.Int32,
}


def _order_labels(markers: pl.DataFrame) -> pl.DataFrame:
    """Markers whose k is a label get chunk_idx = the label's place (0..) by first start within
    its rank, request and virtual stage; integer ks are kept. Drops `label`."""
    labelled = markers.filter(pl.col("chunk_idx").is_null())
    if labelled.is_empty():
        return markers.drop("label")
    group = ["rank", "request_id", "vstage"]
    order = (
        labelled.group_by([*group, "label"], maintain_order=True)
        .agg(pl.col("m_start").min().alias("_first"))
        .with_columns((pl.col("_first").rank("ordinal").over(group) - 1).cast(pl.Int32).alias("_k"))
        .drop("_first")
    )
    return (
        markers.join(order, on=[*group, "label"], how="left", nulls_equal=True)
        .with_columns(pl.coalesce("chunk_idx", "_k").alias("chunk_idx"))
        .drop("_k", "label")
    )


def _contained(anchors: pl.DataFrame, markers: pl.DataFrame) -> pl.DataFrame:
    """For each anchor (row_id, rank, anchor_ns), the innermost marker containing it."""
    out = []
    for rank in anchors.get_column("rank").unique().to_list():
        a = anchors.filter(pl.col("rank") == rank)
        m = markers.filter(pl.col("rank") == rank).drop("rank").with_row_index("marker_id")
        if m.is_empty():
            continue
        hits = a.join_where(
            m, pl.col("anchor_ns") >= pl.col("m_start"), pl.col("anchor_ns") < pl.col("m_end")
        )
        # nested markers: the innermost one (latest start) owns the event
        out.append(hits.sort("m_start").group_by("row_id").last().select(list(_OWNER_SCHEMA)))
    if not out:
        return pl.DataFrame(schema=_OWNER_SCHEMA)
    return pl.concat(out)


def segment_chunks(
    slices: pl.DataFrame,
    run_id: str,
    marker_regex: str | Pattern = DEFAULT_MARKER_REGEX,
    *,
    include_comm: bool = False,
    link: Link = "auto",
    link_keys: tuple[str, ...] = LINK_KEYS,
    vstage_of_rank: dict[int, int] | None = None,
    renumber: bool = False,
    match_timeout_s: float | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Chunks of one run from its canonical slices, and per-rank device time left unassigned.

    Device work: compute-lane slices except annotations (`gpu_user_annotation`), Ascend stream
    waits and DMA copies (`NON_WORK_TASK_TYPES`) and compute-lane tasks whose connection_id
    belongs to an HCCL op (the profiler keeps a collective's SDMA / Notify tasks on the Ascend
    Hardware lane); with `include_comm`, those transfers and the comm lane count too.
    `link`: "auto" anchors a device slice at the earliest host slice an id in args links it to
    (the operator that asked for it, ahead of the runtime's launch call) and at its own start
    otherwise; "time" uses time containment only; "flow" keeps only
    linked slices. `vstage_of_rank` fills the virtual stage of markers without `vs`;
    `renumber` re-indexes k as 0.. in marker start order (for ProfilerStep#N windows).
    A marker regex other than the built-in ones must have the named groups req and k
    (`compile_marker_regex`); its matching is bounded by `match_timeout_s` (MATCH_TIMEOUT_S)
    over the run's host slice names. Unusable rules raise MarkerRuleError.
    Returns (chunks in the canonical schema, unassigned report: one row per rank of the run).
    """
    if "run_id" in slices.columns:
        slices = slices.filter(pl.col("run_id") == run_id)
    frame = prepared_slices(slices)
    host = frame.filter(pl.col("lane") == "host")
    device = work_slices(frame, include_comm)
    device = device.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"))
    markers = chunk_markers(host, marker_regex, vstage_of_rank, renumber, match_timeout_s)
    linked = pl.DataFrame(schema=ANCHOR_SCHEMA)
    if link != "time":
        linked = launch_anchors(device, host, link_keys)
    part = owned_work(device, markers, linked, link)
    return summarize_chunks(run_id, markers, [part])


def prepared_slices(frame: pl.DataFrame, first_row_id: int = 0) -> pl.DataFrame:
    """`frame` (canonical slices of one run) as segmentation reads it: rank Int32, start_ns
    Int64, a row_id (from `first_row_id`) and args (null when the frame has none)."""
    frame = frame.with_columns(
        pl.col("rank").cast(pl.Int32), pl.col("start_ns").cast(pl.Int64)
    ).with_row_index("row_id", offset=first_row_id)
    if "args" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.String).alias("args"))
    return frame


@dataclass(frozen=True)
class OwnedWork:
    """Device work of (a part of) a run, narrowed to what the chunk rows and the unassigned
    report are computed from: every work slice (rank, start_ns, end_ns), the assigned ones with
    their chunk key, and the rank of each slice a link anchored."""

    device: pl.DataFrame
    assigned: pl.DataFrame
    flow_linked: pl.DataFrame


def owned_work(
    device: pl.DataFrame, markers: pl.DataFrame, linked: pl.DataFrame, link: Link
) -> OwnedWork:
    """Which marker owns each slice of `device` (work slices with row_id, rank, start_ns,
    end_ns): the innermost one containing its anchor, the start of the host slice `linked`
    (row_id, host_ns) gives it, else its own start (`link` "auto"; "time": its own start only;
    "flow": linked slices only). Each slice is decided alone, so a run's work may be given in
    parts (pipelines/analysis/chunks/segment_batches.py)."""
    anchors = device.select("row_id", "rank", pl.col("start_ns").alias("anchor_ns"))
    if link != "time":
        anchors = anchors.join(linked, on="row_id", how="left").with_columns(
            pl.coalesce("host_ns", "anchor_ns").alias("anchor_ns")
        )
        if link == "flow":
            anchors = anchors.filter(pl.col("host_ns").is_not_null())
        anchors = anchors.drop("host_ns")
    owner = _contained(anchors, markers)
    key = ["rank", "request_id", "vstage", "chunk_idx"]
    assigned = device.join(owner, on="row_id", how="inner").select(*key, "start_ns", "end_ns")
    flow_linked = device.select("row_id", "rank").join(linked, on="row_id").select("rank")
    return OwnedWork(device.select("rank", "start_ns", "end_ns"), assigned, flow_linked)


def summarize_chunks(
    run_id: str, markers: pl.DataFrame, parts: list[OwnedWork]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(chunks in the canonical schema, the unassigned report: one row per rank) of a run from
    its markers and its device work in parts (`owned_work`)."""
    device = pl.concat([p.device for p in parts])
    assigned = pl.concat([p.assigned for p in parts])
    flow_linked = pl.concat([p.flow_linked for p in parts])
    key = ["rank", "request_id", "vstage", "chunk_idx"]

    busy = length_by(assigned, key)
    spans = assigned.group_by(key).agg(pl.col("start_ns").min(), pl.col("end_ns").max())
    chunks = (
        markers.join(spans, on=key, how="inner")
        .join(busy, on=key, how="inner")
        .with_columns(pl.lit(run_id).alias("run_id"))
        .sort("rank", "vstage", "request_id", "chunk_idx")
    )
    chunks = conform("chunks", chunks.select(c for c in SCHEMAS["chunks"] if c in chunks.columns))

    per_rank_all = length_by(device, ["rank"]).rename({"busy_ns": "device_busy_ns"})
    per_rank_assigned = length_by(assigned, ["rank"]).rename({"busy_ns": "assigned_busy_ns"})
    counts = device.group_by("rank").agg(pl.len().alias("n_device_slices"))
    counts_assigned = assigned.group_by("rank").agg(pl.len().alias("n_assigned"))
    marker_counts = markers.group_by("rank").agg(pl.len().alias("n_markers"))
    chunk_counts = chunks.group_by("rank").agg(pl.len().alias("n_chunks"))
    flow_counts = flow_linked.group_by("rank").agg(pl.len().alias("n_flow_linked"))
    ranks = pl.concat(
        [device.select("rank"), markers.select("rank")], how="vertical_relaxed"
    ).unique()
    report = (
        ranks.join(per_rank_all, on="rank", how="left")
        .join(per_rank_assigned, on="rank", how="left")
        .join(counts, on="rank", how="left")
        .join(counts_assigned, on="rank", how="left")
        .join(marker_counts, on="rank", how="left")
        .join(chunk_counts, on="rank", how="left")
        .join(flow_counts, on="rank", how="left")
        .fill_null(0)
        .with_columns(
            pl.lit(run_id).alias("run_id"),
            (pl.col("device_busy_ns") - pl.col("assigned_busy_ns")).alias("unassigned_ns"),
            (pl.col("n_device_slices") - pl.col("n_assigned")).alias("n_unassigned_slices"),
            (pl.col("n_markers") - pl.col("n_chunks")).alias("n_empty_markers"),
        )
        .with_columns(
            pl.when(pl.col("device_busy_ns") > 0)
            .then(pl.col("unassigned_ns") / pl.col("device_busy_ns"))
            .otherwise(None)
            .alias("unassigned_fraction")
        )
        .select([pl.col(c).cast(t) for c, t in UNASSIGNED_SCHEMA.items()])
        .sort("rank")
    )
    return chunks, report


def run_totals(unassigned: pl.DataFrame) -> pl.DataFrame:
    """The per-rank unassigned report summed to one row per run."""
    return (
        unassigned.group_by("run_id")
        .agg(
            pl.col("device_busy_ns").sum(),
            pl.col("unassigned_ns").sum(),
            pl.col("n_markers").sum(),
            pl.col("n_empty_markers").sum(),
        )
        .with_columns(
            (pl.col("unassigned_ns") / pl.col("device_busy_ns")).alias("unassigned_fraction")
        )
        .sort("run_id")
    )
