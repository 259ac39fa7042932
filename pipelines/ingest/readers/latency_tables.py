"""Operator-latency tables -> `latency_points` rows (sql/schema/latency_points.sql).

Four layouts, recognised by their header (docs/latency_tables.md):

* `vidur_attention`: Vidur's `attention.csv` (microsoft/vidur, data/profiling/...): one row per
  (batch_size, prefill_chunk_size, kv_cache_size, is_prefill) with `time_stats.<op>.{min, max,
  mean, median, std}` per attention operator (attn_prefill, attn_decode, attn_input_reshape,
  attn_output_reshape, attn_kv_cache_save), in ms. Prefill rows (is_prefill True) become points
  of tokens = prefill_chunk_size, prefix = kv_cache_size; decode rows are not prefill chunks and
  are left out (counted).
* `vidur_mlp`: Vidur's `mlp.csv`: one row per num_tokens with `time_stats.<op>.*` of the rest of
  a layer (projections, norms, MLP, residual add; `emb` once per model). Points have no prefix.
* `generic`: CSV or Parquet with columns `tokens`, `prefix` and one of `time_ms` / `time_us` /
  `time_ns`; optional `operator`, `source`, `hardware`, `model`, `tp`, `attention`,
  `batch_size`, and `mean_<unit>` / `min_` / `max_` / `std_` in the time column's unit. Any
  configurator's export maps to it.
* `aiconfigurator`: NVIDIA aiconfigurator's perf databases (ai-dynamo/aiconfigurator,
  `systems/data/<system>/<family>/<framework>/<version>/*_perf.parquet`): one row per measured
  point with `framework`, `version`, `device`, `op_name`, `kernel_source`, `isl`, `step`,
  `latency` (ms) and the shape columns of its family. A context row's `isl` is the chunk's new
  tokens and `step` the tokens already in the KV cache (the collectors log `isl, step = s,
  prefix`); generation rows (op names with `generation`) are decode steps and are left out
  (counted). The operator is `op_name` plus the shape columns that are no fact of their own
  (kv-cache dtype, GEMM type, heads, head dim, window), so one file's configurations are
  separate curves; model, device and tp_size are the point's facts.

Facts a table does not carry (the model of an old-layout Vidur file, a generic table's hardware)
come from the path (Vidur's `compute/<hardware>/<org>/<model>/`), else the ingest tags
(`--tag model=... --tag hardware=...`), else they stay NULL. A row with a bad value costs that
row: it is set aside with its line and a named reason (`invalid_rows` in quarantine), the rest of
the table loads.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines import memory_budget
from pipelines.ingest.dropped import MAX_END_NS
from pipelines.ingest.frames import Quarantined, stored_path
from pipelines.store.duck import private_connection, sql_string
from pipelines.store.schema import polars_schema

VIDUR_ATTENTION = "vidur_attention"
VIDUR_MLP = "vidur_mlp"
GENERIC = "generic"
AICONFIGURATOR = "aiconfigurator"
LAYOUTS = (VIDUR_ATTENTION, VIDUR_MLP, GENERIC, AICONFIGURATOR)

_STAT = re.compile(r"^time_stats\.(?P<op>[A-Za-z0-9_]+)\.(?P<stat>min|max|mean|median|std)$")
_VIDUR_ATTENTION_KEYS = ("batch_size", "prefill_chunk_size", "kv_cache_size", "is_prefill")
_GENERIC_TIMES = {"time_ms": 1e6, "time_us": 1e3, "time_ns": 1.0}
_GENERIC_FACTS = ("source", "hardware", "model", "tp", "attention")
_VIDUR_HARDWARE = re.compile(r"(^|/)profiling/(compute/)?(?P<hw>[a-z0-9_]+)/")
_AIC_KEYS = ("framework", "version", "device", "op_name", "isl", "step", "latency")
# shape columns of an aiconfigurator table that name its curve (column, short name); num_heads
# only where no tp_size says it (a module table's heads are the model's split by tp)
_AIC_QUALIFIERS = (
    *(("num_heads", "h"), ("num_key_value_heads", "kvh"), ("head_dim", "d")),
    *(("attn_dtype", "attn"), ("kv_cache_dtype", "kv"), ("gemm_type", "gemm")),
    ("window_size", "win"),
)
_AIC_DTYPES = ("attn_dtype", "kv_cache_dtype", "gemm_type")
_AIC_SPARSE = re.compile(r"(^|_)(dsa|msa|csa|hca|sparse)(_|$)")
_VIDUR_MODEL = re.compile(r"(^|/)profiling/compute/[a-z0-9_]+/(?P<model>[^/]+/[^/]+)/[^/]+$")

# the row-level reasons (docs/latency_tables.md)
MISSING_TIME = "missing_time"
INVALID_TIME = "invalid_time"  # not a number, NaN or infinite
NEGATIVE_TIME = "negative_time"
INVALID_TOKENS = "invalid_tokens"  # missing, not a whole number, or below 1
INVALID_PREFIX = "invalid_prefix"  # missing, not a whole number, or negative
# issue 36 round five: each of these values was read as a default or NULL without a word
INVALID_BATCH = "invalid_batch"  # given, not a whole number >= 1 ('abc', -3, 2.5 were batch 1)
INVALID_STAT = "invalid_stat"  # a mean / min / max / std given but no finite number >= 0 (was NULL)
INVALID_TP = "invalid_tp"  # a tensor-parallel degree given but no whole number >= 1 (was NULL)
INVALID_PHASE = "invalid_phase"  # Vidur is_prefill neither true nor false (was a decode row)
PAST_MAX_LEN = "past_max_len"  # Vidur: prefix + chunk past the row's max_model_len
# round six: an empty operator cell was filed under an operator named `unnamed`
MISSING_OPERATOR = "missing_operator"
# round six: an empty source / hardware / model cell (no tag giving it) took its row out of its
# line into a line of its own without a word; `attention` and `tp` may be left empty ("not
# given": a mixed table leaves them empty for operators they do not describe)
NAMING_FACTS = ("source", "hardware", "model")
# round seven: a CSV row with more cells than the header (which cell is which is unknown) lost
# the whole table (`unreadable_table`: Polars' "found more fields than defined in 'Schema'")
EXTRA_CELLS = "extra_cells"
_EXTRA = "_extra_cells"  # the text frame's mark of such a row
SNIFF_BYTES = 1 << 16


@dataclass
class LatencyTable:
    """One table file's points (columns of sql/schema/latency_points.sql) and what was set aside."""

    path: Path
    layout: str
    points: pl.DataFrame | pl.LazyFrame
    """A LazyFrame over a spilled Parquet file only for a streamed read of a table larger than
    one block (`read_table(..., streamed=True)`), else in memory."""
    quarantined: list[Quarantined] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)
    """Rows that are no prefill point and were not read (decode rows of Vidur attention)."""
    count: int = 0
    """How many points (`points`' rows)."""
    first: dict | None = None
    """The first point in file order (a report's facts), None when there is none."""


def header_of(path: Path) -> list[str] | None:
    """The column names of a CSV (first line) or Parquet file, None when it is neither."""
    try:
        if path.suffix.lower() == ".parquet":
            return list(pl.read_parquet_schema(path))
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except (OSError, pl.exceptions.PolarsError):
        return None
    line = re.split(rb"\r\n|\r|\n", head, maxsplit=1)[0]  # CR-only line ends too
    line = line.strip().decode("utf-8", "replace").lstrip("\ufeff")
    return [name.strip().strip('"') for name in line.split(",")] if line else None


def layout_of(columns: list[str]) -> str | None:
    """Which latency-table layout a header is, or None."""
    names = set(columns)
    ops = {m["op"] for c in columns if (m := _STAT.match(c))}
    if set(_VIDUR_ATTENTION_KEYS) <= names and "attn_prefill" in ops:
        return VIDUR_ATTENTION
    if "num_tokens" in names and ops and "attn_prefill" not in ops:
        return VIDUR_MLP
    if {"tokens", "prefix"} <= names and names & set(_GENERIC_TIMES):
        return GENERIC
    if set(_AIC_KEYS) <= names:
        return AICONFIGURATOR
    return None


def sniff(path: Path) -> str | None:
    """The layout of a latency-table file (.csv or .parquet), None for any other file."""
    if path.suffix.lower() not in (".csv", ".parquet"):
        return None
    columns = header_of(path)
    return layout_of(columns) if columns else None


def table_id_of(origin: str) -> str:
    """A table's id: lt- and 16 hex digits of the sha256 of its stored (resolved) path."""
    return f"lt-{hashlib.sha256(origin.encode('utf-8', 'backslashreplace')).hexdigest()[:16]}"


def read_table(
    path: Path,
    tags: dict[str, str] | None = None,
    *,
    streamed: bool = False,
    block_bytes: int | None = None,
) -> LatencyTable:
    """Read one latency-table file. Raises ValueError when it is no latency table.

    The file is read a block at a time (`block_bytes` of CSV text, else a share of the ingest
    memory budget; Parquet a like number of rows), each block checked and turned into points
    before the next is read. `streamed`: a table of more than one block keeps its points in a
    Parquet spill (memory_budget.new_spill_dir, released with the run's spills) and `points` is a
    LazyFrame over it, so memory stays flat on any table size (docs/bench_ingest.md "Latency
    tables in blocks"); otherwise the points are gathered in memory. Both give the same rows."""
    path = Path(path)
    layout = sniff(path)
    if layout is None:
        raise ValueError(f"{path.name} is not an operator-latency table")
    with path.open("rb") as stream:
        content_hash = hashlib.file_digest(stream, "sha256").hexdigest()
    tags = tags or {}
    facts = _facts(path, layout, tags)
    block_bytes = block_bytes or block_bytes_of(memory_budget.max_memory())
    operator = tags.get("operator") or "unnamed"
    parts: list[pl.DataFrame] = []
    spill: Path | None = None
    spilled: list[Path] = []
    bad: dict[int, str] = {}
    left_out: Counter[str] = Counter()
    count, first = 0, None
    operators: dict[str, None] = {}  # in the order the long frames hold them
    for frame in _text_frames(path, block_bytes):
        if _EXTRA in frame.columns:
            bad.update(dict.fromkeys(frame.filter(_EXTRA)["line"].to_list(), EXTRA_CELLS))
            frame = frame.filter(~pl.col(_EXTRA)).drop(_EXTRA)
        long, block_left_out = _long_of(layout, frame, operator)
        del frame
        operators.update(dict.fromkeys(long["operator"].unique(maintain_order=True).to_list()))
        left_out.update(block_left_out)
        points, block_bad = _points(long, path, content_hash, layout, facts, set(tags))
        del long
        bad.update(block_bad)  # a line is in one block only
        if first is None and points.height:  # the first point of its key: replicate 1
            first = points.row(0, named=True) | {"replicate": 1}
        count += points.height
        if streamed and parts and spill is None:  # a second block: the table goes to disk
            spill = memory_budget.new_spill_dir()
            spilled.append(spill / "part-000000.parquet")
            parts.pop().write_parquet(spilled[-1])
        if spill is not None:
            spilled.append(spill / f"part-{len(spilled):06d}.parquet")
            points.write_parquet(spilled[-1])
        else:
            parts.append(points)
        del points
    if spill is not None:
        table_points: pl.DataFrame | pl.LazyFrame = _numbered_on_disk(spill, spilled)
    else:
        schema = polars_schema("latency_points")
        table_points = pl.concat(parts) if parts else pl.DataFrame(schema=schema)
        if len(parts) > 1 and layout in (VIDUR_ATTENTION, VIDUR_MLP):
            # a Vidur long frame is one operator after another: the whole table's order again
            rank = pl.col("operator").replace_strict(list(operators), range(len(operators)))
            table_points = table_points.sort(rank, "line", maintain_order=True)
        table_points = _numbered(table_points)
    quarantined = []
    if bad:
        lines = [f"line {line}: {reason}" for line, reason in sorted(bad.items())]
        reasons = sorted(set(bad.values()))
        item = Quarantined.entries_set_aside(path, lines, reason="invalid_rows")
        item = Quarantined(
            item.path, item.reason, f"{item.detail} ({', '.join(reasons)})", content_hash
        )
        quarantined.append(item)
    left = {k: v for k, v in left_out.items() if v}
    return LatencyTable(path, layout, table_points, quarantined, left, count, first)


# the text of a block of CSV is this share of the ingest budget: a 100 MB generic CSV held whole
# (its text twice, the text frame, the long frame and the points) took 2.41 GB (2026-12-04)
BUDGET_SHARE_OF_BLOCK = 256
MIN_BLOCK_BYTES = 1 << 14
PARQUET_BYTES_PER_ROW = 64  # a Parquet block's rows: block_bytes / this


def block_bytes_of(budget: int) -> int:
    """Bytes of CSV text read at a time within an ingest memory budget (8 MiB at 2 GiB)."""
    return max(MIN_BLOCK_BYTES, budget // BUDGET_SHARE_OF_BLOCK)


def _long_of(layout: str, frame: pl.DataFrame, operator: str) -> tuple[pl.DataFrame, dict]:
    """The long frame of a block (one row per operator x table row) and its rows left out."""
    if layout == VIDUR_ATTENTION:
        return _vidur_attention(frame)
    if layout == VIDUR_MLP:
        return _vidur_mlp(frame), {}
    if layout == AICONFIGURATOR:
        return _aiconfigurator(frame)
    return _generic(frame, operator), {}


def _text_frames(path: Path, block_bytes: int) -> Iterator[pl.DataFrame]:
    """The table's blocks, every cell as text (a number the table mangled stays visible), plus
    `line` (the header is line 1), numbered over the whole file."""
    if path.suffix.lower() == ".parquet":
        rows = pl.scan_parquet(path).select(pl.len()).collect().item()
        step = max(1, block_bytes // PARQUET_BYTES_PER_ROW)
        for offset in range(0, max(rows, 1), step):
            frame = _text_columns(pl.scan_parquet(path).slice(offset, step).collect())
            line = pl.int_range(offset + 2, offset + 2 + frame.height, dtype=pl.Int64)
            yield frame.with_columns(line.alias("line")).select("line", pl.exclude("line"))
        return
    line = 2
    header = None
    for text in _csv_texts(path, block_bytes):
        if header is None:
            header = _header_of(text)
            body = text
        else:
            body = f"{header}\n{text}"
        frame = _read_block(body)
        # a name as header_of (the layout's test) reads it: ` time_us ` is time_us (issue 36
        # round seven: the layout was found, then the padded column was not, an IndexError)
        frame = frame.rename({name: name.strip() for name in frame.columns})
        del body
        frame = frame.with_row_index("line", offset=line).with_columns(
            pl.col("line").cast(pl.Int64)
        )
        line += frame.height
        # a blank line is no row (Polars gave it a row of empty cells: a missing_time set aside)
        yield frame.filter(~pl.all_horizontal(pl.exclude("line", _EXTRA).is_null()))


def _read_block(body: str) -> pl.DataFrame:
    """A CSV block (its header first) as text columns. Rows with more cells than the header are
    kept, cut to the header, and marked in `_EXTRA` (the caller sets them aside): found by
    counting each record's cells with the csv module, only for a block Polars refuses."""
    try:
        return pl.read_csv(body.encode(), infer_schema=False)
    except pl.exceptions.ComputeError as exc:
        if "more fields" not in str(exc):
            raise
    frame = pl.read_csv(body.encode(), infer_schema=False, truncate_ragged_lines=True)
    cells = [len(record) for record in csv.reader(io.StringIO(body))]
    extra = [count > cells[0] for count in cells[1:]]  # one record per Polars row
    if len(extra) != frame.height:
        raise ValueError("rows with more cells than the header, not told apart")
    return frame.with_columns(pl.Series(_EXTRA, extra))


def _header_of(text: str) -> str:
    """The header line of a CSV text (up to the first line end outside quotes); ValueError when
    a column is named twice."""
    end = 0
    while True:
        end = text.find("\n", end)
        if end < 0 or text.count('"', 0, end) % 2 == 0:
            break
        end += 1
    header = text if end < 0 else text[:end]
    names = [name.strip() for name in next(csv.reader(io.StringIO(header)), [])]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"column {twice[0]!r} is given twice: which one is meant is unknown")
    return header


def _csv_texts(path: Path, block_bytes: int) -> Iterator[str]:
    """The CSV file as text about `block_bytes` at a time, each piece ending at a line end
    outside quotes. Bytes that are no UTF-8 (a model name in another code page) are kept as \\xNN
    text, as the other CSV readers keep them; old-Mac CR-only line ends are line ends (Polars read
    such a file as one header line: every row lost without a word; issue 36 round five)."""
    pending = b""
    first = True
    with path.open("rb") as handle:
        while True:
            data = handle.read(block_bytes)
            pending += data
            end = _line_end_cut(pending) if data else len(pending)
            if end == 0 and data:
                continue  # no line end outside quotes yet: read on
            piece, pending = pending[:end], pending[end:]
            text = piece.decode("utf-8", "backslashreplace")
            del piece
            if first:
                text = text.removeprefix("\ufeff")
                first = False
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            if text:
                yield text
            if not data:
                return


def _line_end_cut(buffer: bytes) -> int:
    """Where `buffer` may be cut: after its last LF (else after its last CR that is not the last
    byte, which a LF may follow), with an even number of quotes before; 0 when nowhere."""
    end = buffer.rfind(b"\n") + 1 or buffer.rfind(b"\r", 0, len(buffer) - 1) + 1
    if end == 0 or buffer.count(b'"', 0, end) % 2:
        return 0
    return end


def _text_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """Every column of a Parquet table as text. A nested or binary column (a list, struct, map or
    bytes) no layout reads is left out (it made the whole table unreadable: issue 36 round five);
    one a layout reads is refused by name (ValueError: the file is quarantined)."""
    kept = []
    for name, dtype in frame.schema.items():
        if dtype.is_nested() or dtype == pl.Binary or dtype == pl.Object:
            if _is_read(name):
                raise ValueError(f"column {name!r} is a {dtype}, not a number or a text")
            continue
        kept.append(pl.col(name).cast(pl.String))
    return frame.select(kept)


def _is_read(name: str) -> bool:
    """Whether some layout reads a column of this name."""
    read = {"tokens", "prefix", "batch_size", "operator", *_GENERIC_FACTS, *_VIDUR_ATTENTION_KEYS}
    read |= {"num_tokens", "num_tensor_parallel_workers", "n_embd", "n_q_head", "n_head"}
    read |= {"n_kv_head", "max_model_len", *_GENERIC_TIMES}
    stat = re.match(r"^(mean|min|max|std)_(ms|us|ns)$", name)
    return name in read or bool(_STAT.match(name)) or bool(stat)


def _facts(path: Path, layout: str, tags: dict[str, str]) -> dict:
    """Table-wide facts: from the path (Vidur), the table's own columns, then the tags."""
    text = stored_path(path.resolve()).replace("\\", "/")
    vidur = layout in (VIDUR_ATTENTION, VIDUR_MLP)
    facts: dict[str, object] = {"source": "vidur" if vidur else None}
    if vidur:
        hw = _VIDUR_HARDWARE.search(text)
        model = _VIDUR_MODEL.search(text)
        facts["hardware"] = hw["hw"] if hw else None
        facts["model"] = model["model"] if model else None  # else per row: _vidur_facts
        facts["attention"] = "dense"  # Vidur profiles dense attention (FlashAttention etc.)
    for key in _GENERIC_FACTS:
        if key in tags and tags[key] != "":
            facts[key] = int(tags[key]) if key == "tp" else tags[key]
    return facts


def _vidur_facts(frame: pl.DataFrame, layout: str) -> list[pl.Expr]:
    """Per-row facts of a Vidur file (one file may hold several tp degrees or, in the old
    layout without a model folder, several models): tp from num_tensor_parallel_workers, and a
    model name from the profiled shapes, d<n_embd>-q<query heads>-kv<kv heads> (used only where
    the path names no model)."""
    facts = []
    if "num_tensor_parallel_workers" in frame.columns:
        facts.append(pl.col("num_tensor_parallel_workers").alias("fact_tp"))
    if layout == VIDUR_ATTENTION and "max_model_len" in frame.columns:
        facts.append(pl.col("max_model_len").alias("fact_max_len"))
    heads = "n_q_head" if layout == VIDUR_ATTENTION else "n_head"
    if {"n_embd", heads, "n_kv_head"} <= set(frame.columns):
        parts = [pl.lit("d"), pl.col("n_embd"), pl.lit("-q"), pl.col(heads)]
        shape = pl.concat_str([*parts, pl.lit("-kv"), pl.col("n_kv_head")])
        facts.append(shape.alias("fact_shape"))
    return facts


def _stat_columns(frame: pl.DataFrame) -> dict[str, dict[str, str]]:
    ops: dict[str, dict[str, str]] = {}
    for column in frame.columns:
        if m := _STAT.match(column):
            ops.setdefault(m["op"], {})[m["stat"]] = column
    return ops


def _long(frame: pl.DataFrame, tokens: str, prefix: str | None, batch: str | None) -> pl.DataFrame:
    """One row per operator x table row: line, operator, tokens/prefix/batch text, stats text."""
    parts = []
    facts = _vidur_facts(frame, VIDUR_ATTENTION if prefix else VIDUR_MLP)
    for op, stats in _stat_columns(frame).items():
        if "median" not in stats:
            continue
        parts.append(
            frame.select(
                "line",
                pl.lit(op).alias("operator"),
                pl.col(tokens).alias("tokens_text"),
                (pl.col(prefix).fill_null("") if prefix else pl.lit(None, pl.String)).alias(
                    "prefix_text"
                ),
                (pl.col(batch).fill_null("") if batch else pl.lit(None, pl.String)).alias(
                    "batch_text"
                ),
                *(
                    (pl.col(stats[s]) if s in stats else pl.lit(None, pl.String)).alias(f"{s}_text")
                    for s in ("median", "mean", "min", "max", "std")
                ),
                pl.lit(1e6).alias("scale"),  # Vidur's times are ms
                *facts,
            )
        )
    return pl.concat(parts) if parts else pl.DataFrame()


def _vidur_attention(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    phase = pl.col("is_prefill").str.strip_chars().str.to_lowercase()
    decode = frame.filter((phase == "false").fill_null(False))
    frame = frame.filter((phase != "false").fill_null(True))
    long = _long(frame, "prefill_chunk_size", "kv_cache_size", "batch_size")
    # a row whose is_prefill is neither true nor false is set aside in _validate (invalid_phase)
    phases = frame.select("line", phase.alias("phase"))
    long = long.join(phases, on="line", how="left", maintain_order="left")
    # a prefill row has no decode time: that operator's empty cells are not a bad value
    long = long.filter(pl.col("operator") != "attn_decode")
    return long, ({"decode_rows": decode.height} if decode.height else {})


def _vidur_mlp(frame: pl.DataFrame) -> pl.DataFrame:
    return _long(frame, "num_tokens", None, None)


def _generic(frame: pl.DataFrame, operator: str) -> pl.DataFrame:
    times = [c for c in _GENERIC_TIMES if c in frame.columns]
    if len(times) > 1:  # which unit the points are in is unknown (time_ms was taken silently)
        raise ValueError(f"two time columns ({', '.join(times)}): which one is meant is unknown")
    time_column = times[0]
    unit = time_column.removeprefix("time_")  # mean_<unit>, min_, max_, std_ ride along
    # an operator column names every row's operator: an empty cell is that row's missing value
    # (_validate sets it aside), not the file's default
    named = pl.col("operator") if "operator" in frame.columns else pl.lit(operator)
    return frame.select(
        "line",
        named.alias("operator"),
        pl.col("tokens").alias("tokens_text"),
        pl.col("prefix").fill_null("").alias("prefix_text"),
        (pl.col("batch_size") if "batch_size" in frame.columns else pl.lit(None, pl.String)).alias(
            "batch_text"
        ),
        pl.col(time_column).alias("median_text"),
        *(
            (
                pl.col(f"{s}_{unit}") if f"{s}_{unit}" in frame.columns else pl.lit(None, pl.String)
            ).alias(f"{s}_text")
            for s in ("mean", "min", "max", "std")
        ),
        pl.lit(_GENERIC_TIMES[time_column]).alias("scale"),
        *(
            pl.col(c).alias(f"fact_{c}")
            for c in _GENERIC_FACTS
            if c in frame.columns and c != "operator"
        ),
    )


def _short_dtype(column: str) -> pl.Expr:
    return pl.col(column).str.replace("^bfloat16$", "bf16").str.replace("^float16$", "fp16")


def _aiconfigurator(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Context rows of an aiconfigurator perf table: tokens = isl, prefix = step, time = latency
    (ms); the operator is op_name and its shape qualifiers; facts per row."""
    generation = pl.col("op_name").str.contains("generation").fill_null(False)
    decode = frame.filter(generation)
    frame = frame.filter(~generation)
    qualifiers = [
        pl.concat_str(
            pl.lit(f" {short}="), _short_dtype(column) if column in _AIC_DTYPES else pl.col(column)
        )
        for column, short in _AIC_QUALIFIERS
        if column in frame.columns and not (column == "num_heads" and "tp_size" in frame.columns)
    ]
    operator = pl.concat_str([pl.col("op_name"), *qualifiers], ignore_nulls=True)
    source = pl.concat_str(
        pl.lit("aiconfigurator "),
        pl.col("framework").str.to_lowercase(),
        pl.lit(" "),
        pl.col("version"),
    )
    sparse = pl.col("op_name").str.to_lowercase().str.contains(_AIC_SPARSE.pattern)
    facts = [
        source.alias("fact_source"),
        pl.col("device").alias("fact_hardware"),
        pl.when(sparse).then(pl.lit("sparse")).otherwise(pl.lit("dense")).alias("fact_attention"),
    ]
    if "model" in frame.columns:
        facts.append(pl.col("model").alias("fact_model"))
    if "tp_size" in frame.columns:
        facts.append(pl.col("tp_size").alias("fact_tp"))
    batch = pl.col("batch_size") if "batch_size" in frame.columns else pl.lit(None, pl.String)
    long = frame.select(
        "line",
        operator.alias("operator"),
        pl.col("isl").alias("tokens_text"),
        pl.col("step").alias("prefix_text"),
        batch.alias("batch_text"),
        pl.col("latency").alias("median_text"),
        *(pl.lit(None, pl.String).alias(f"{s}_text") for s in ("mean", "min", "max", "std")),
        pl.lit(1e6).alias("scale"),  # aiconfigurator's latency is ms
        *facts,
    )
    return long, ({"generation_rows": decode.height} if decode.height else {})


# the largest token count, prefix or batch taken (batch_size is an INTEGER column; a token
# count past 2^31 is no prompt, and 2^64 failed the whole file before: issue 36 round four)
MAX_INTEGER = 2**31 - 1


def _number(text: str | None) -> float | None:
    """The number a cell writes; NaN when it writes none. A CSV number is ASCII digits, sign,
    point and exponent: Python's float() also takes `1_000` and other scripts' digits, which
    no CSV reader (DuckDB's, the profilers') reads as a number."""
    if text is None:
        return None
    cell = text.strip()
    if "_" in cell or not cell.isascii():
        return math.nan
    try:
        return float(cell)
    except ValueError:
        return math.nan


def _whole(value: float | None) -> int | None:
    if value is None or not math.isfinite(value) or value != int(value):
        return None
    return int(value)


# rows of the long frame checked and built in Python at a time: a row held as a dict costs
# ~1.6 kB, so the whole 3.7 M-point table of a 100 MB CSV took 6.1 GB at once (2026-12-04)
VALIDATE_ROWS = 100_000


def _points(
    long: pl.DataFrame, path: Path, content_hash: str, layout: str, facts: dict, tagged: set[str]
) -> tuple[pl.DataFrame, dict[int, str]]:
    """A block's points (latency_points columns, `replicate` not yet numbered) and {line: reason}
    of the rows set aside, `VALIDATE_ROWS` long-frame rows at a time. A line set aside keeps no
    point (one bad value spoils its row, whichever operator's cell it is in)."""
    parts, bad = [], {}
    for part in long.iter_slices(VALIDATE_ROWS) if not long.is_empty() else ():
        kept, part_bad = _validate(part, tagged)
        for line, reason in part_bad:
            bad.setdefault(line, reason)
        parts.append(_finish(kept, path, content_hash, layout, facts, tagged))
        del kept
    schema = polars_schema("latency_points")
    points = pl.concat(parts) if parts else pl.DataFrame(schema=schema)
    if bad:
        points = points.filter(~pl.col("line").is_in(list(bad)))
    return points, bad


# one point of a table: the row's facts too, as sql/quality/latency_points/replicates_agree.sql
# groups them (one Vidur mlp.csv holds tp 1/2/4/8, an aiconfigurator file several models and tp)
_REPLICATE_KEY = (*_GENERIC_FACTS, "operator", "tokens", "prefix_tokens", "batch_size")


def _numbered(points: pl.DataFrame) -> pl.DataFrame:
    """`replicate` numbers a repeated point (the same facts, operator, tokens, prefix and batch)
    in file order."""
    schema = polars_schema("latency_points")
    replicate = (pl.int_range(pl.len()).over(list(_REPLICATE_KEY)) + 1).cast(schema["replicate"])
    return points.with_columns(replicate.alias("replicate"))


def _numbered_on_disk(spill: Path, parts: list[Path]) -> pl.LazyFrame:
    """The spilled blocks' points with `replicate` numbered over the whole table (in file order:
    by line; one line is one point of an operator), by DuckDB under the budget's memory limit
    (its window spills to the folder), written to one Parquet file there."""
    schema = polars_schema("latency_points")
    key = ", ".join(f'"{c}"' for c in _REPLICATE_KEY)
    replicate = f'row_number() over (partition by {key} order by "line")'
    columns = ", ".join(
        f'cast({replicate} as integer) as "replicate"' if c == "replicate" else f'"{c}"'
        for c in schema
    )
    target = spill / "latency_points.parquet"
    con = private_connection()
    try:
        con.execute(f"set memory_limit = '{memory_budget.duckdb_limit_mib()}MiB'")
        con.execute(f"set temp_directory = {sql_string(spill / 'duckdb_tmp')}")
        con.execute("set preserve_insertion_order = false")
        # one thread: at the 64 MiB floor two threads' window buffers did not fit (a 256 MB budget
        # failed on Vidur's attention.csv; one thread numbers 3.7 M rows in 167 MiB RSS)
        con.execute("set threads = 1")
        files = ", ".join(sql_string(part) for part in parts)
        con.execute(f"copy (select {columns} from read_parquet([{files}])) to {sql_string(target)}")
    finally:
        con.close()
    for part in parts:
        part.unlink()
    return pl.scan_parquet(target).cast(dict(schema))


def _validate(
    long: pl.DataFrame, tagged: set[str] = frozenset()
) -> tuple[list[dict], list[tuple[int, str]]]:
    """Rows whose values all parse, and (line, reason) of the others (first reason per line).
    `tagged`: the facts an ingest tag gives (a row's own cell of them is not read)."""
    kept: list[dict] = []
    bad: dict[int, str] = {}
    if long.is_empty():
        return kept, []
    unnamed = [
        (f"fact_{f}", f"missing_{f}")
        for f in NAMING_FACTS
        if f"fact_{f}" in long.columns and f not in tagged
    ]
    for row in long.iter_rows(named=True):
        line = row["line"]
        missing = next((why for column, why in unnamed if not str(row[column] or "").strip()), None)
        time = _number(row["median_text"])
        tokens = _whole(_number(row["tokens_text"]))
        prefix_number = _number(row["prefix_text"])
        prefix = _whole(prefix_number)
        if missing is not None:
            reason = missing
        elif not _given(row["operator"]):
            reason = MISSING_OPERATOR
        elif time is None:
            reason = MISSING_TIME
        elif not math.isfinite(time) or abs(time * row["scale"]) >= MAX_END_NS:
            reason = INVALID_TIME  # past int64 ns too (2^64 failed the whole file before)
        elif time < 0:
            reason = NEGATIVE_TIME
        elif tokens is None or not 1 <= tokens <= MAX_INTEGER:
            reason = INVALID_TOKENS
        elif row["prefix_text"] is not None and (prefix is None or not 0 <= prefix <= MAX_INTEGER):
            reason = INVALID_PREFIX
        else:
            reason = _other_reason(row, tokens, prefix)
        if reason is not None:
            bad.setdefault(line, reason)
            continue
        scale = row["scale"]
        stats = {s: _number(row[f"{s}_text"]) for s in ("mean", "min", "max", "std")}
        batch = _whole(_number(row["batch_text"]))
        kept.append(
            {
                "line": line,
                "operator": row["operator"],
                "tokens": tokens,
                "prefix_tokens": prefix,
                "batch_size": batch if batch is not None else 1,
                "time_ns": round(time * scale),
                **{f"{s}_ns": _ns(stats[s], scale) for s in ("mean", "min", "max")},
                "std_ns": stats["std"] * scale
                if stats["std"] is not None and math.isfinite(stats["std"])
                else None,
                **{k: row[k] for k in row if k.startswith("fact_")},
            }
        )
    # a line with one bad operator cell loses that operator's point only if the line is bad for
    # every operator; a line named bad keeps no point (one bad value spoils its row)
    kept = [row for row in kept if row["line"] not in bad]
    return kept, sorted(bad.items())


def _given(text: str | None) -> bool:
    return text is not None and text.strip() != ""


def _count_or_none(text: str | None) -> int | None:
    """A whole number 1 .. 2^31 - 1 written in `text`, else None."""
    value = _whole(_number(text))
    return value if value is not None and 1 <= value <= MAX_INTEGER else None


def _other_reason(row: dict, tokens: int, prefix: int | None) -> str | None:
    """The reasons past time, tokens and prefix (issue 36 round five): a batch size, statistic,
    tensor-parallel degree or is_prefill flag that is given but unusable, a prefix past the row's
    max_model_len. Each was read as a default (batch 1), NULL or a decode row without a word."""
    batch = row["batch_text"]
    if batch is not None and _count_or_none(batch) is None:
        return INVALID_BATCH
    for stat in ("mean", "min", "max", "std"):
        text = row[f"{stat}_text"]
        value = _number(text) if _given(text) else None
        if _given(text) and not (
            value is not None and math.isfinite(value) and 0 <= value * row["scale"] < MAX_END_NS
        ):
            return INVALID_STAT
    if _given(row.get("fact_tp")) and _count_or_none(row["fact_tp"]) is None:
        return INVALID_TP
    if "phase" in row and row["phase"] != "true":
        return INVALID_PHASE
    longest = _count_or_none(row.get("fact_max_len"))
    if longest is not None and prefix is not None and prefix + tokens > longest:
        return PAST_MAX_LEN
    return None


def _ns(value: float | None, scale: float) -> int | None:
    if value is None or not math.isfinite(value) or abs(value * scale) >= MAX_END_NS:
        return None
    return round(value * scale)


def _finish(
    rows: list[dict], path: Path, content_hash: str, layout: str, facts: dict, tagged: set[str]
) -> pl.DataFrame:
    schema = polars_schema("latency_points")
    table_id = table_id_of(stored_path(path.resolve()))
    out = []
    for row in rows:
        row_facts = dict(facts)
        if row_facts.get("model") is None and row.get("fact_shape") and "model" not in tagged:
            row_facts["model"] = row["fact_shape"]
        for key in _GENERIC_FACTS:
            value = row.get(f"fact_{key}")
            if value is not None and value.strip() != "" and key not in tagged:
                row_facts[key] = _count_or_none(value) if key == "tp" else value
        out.append(
            {
                "run_id": table_id,
                "origin": stored_path(path.resolve()),
                "content_hash": content_hash,
                "layout": layout,
                "source": row_facts.get("source") or "table",
                "hardware": row_facts.get("hardware"),
                "model": row_facts.get("model"),
                "tp": row_facts.get("tp") if isinstance(row_facts.get("tp"), int) else None,
                "attention": row_facts.get("attention"),
                "operator": row["operator"],
                "tokens": row["tokens"],
                "prefix_tokens": row["prefix_tokens"],
                "batch_size": row["batch_size"],
                "time_ns": row["time_ns"],
                "mean_ns": row["mean_ns"],
                "min_ns": row["min_ns"],
                "max_ns": row["max_ns"],
                "std_ns": row["std_ns"],
                "line": row["line"],
                "replicate": 0,  # numbered over the whole table by _points
            }
        )
    return pl.DataFrame(out, schema=schema)
