"""Chunk markers from inference engines' own forward annotations (vLLM V1, SGLang): each forward
that computes prefill tokens becomes one chunk row, with no project markers in the trace.

Conventions (docs/engine_annotations.md, read from the released packages):

* vLLM V1 >= 0.14 (`Worker.annotate_profile`, vllm/v1/worker/gpu_worker.py), default:
  `execute_context_<Nc>(<Tc>)_generation_<Ng>(<Tg>)`: Nc prefill requests with Tc query tokens in
  all, Ng decodes with Tg tokens. Some builds write `(<Tc>_<Σq²>)`.
* vLLM >= 0.26 with `detailed_trace_annotation`: `execute_<T>_context_<Nc>(sq<Tc>sk<Kc>sqsq..sqsk..)
  _generation_<Ng>(sq..sk..sqsq..sqsk..)`: Kc = the prefill requests' key tokens (computed before
  plus this forward's), so prefix = Kc - Tc.
* SGLang >= 0.5.11 (`build_step_span_name`, python/sglang/srt/utils/profile_utils.py):
  `step[EXTEND bs=<n> toks=<T>]`, `step[MIXED bs=<n>]` (with `--enable-mixed-chunk`), and from
  0.5.19 with detailed annotations ` c_sq=<Tc> c_sk=<Kc> ...` (and `c=<Nc> g=<Ng>` on MIXED).

Neither names requests, so the request is inferred: a forward with one prefill piece and a known
prefix continues the request whose next prefix it is (prefix = previous prefix + previous
tokens) and starts a new one at prefix 0; its k is its place in that chain (a request first
seen mid-way, the capture having started after its first chunks, gets k = prefix // tokens).
Without a prefix (the default formats) each forward is a request of its own at k = 0. A
forward that mixes several prefill pieces or decodes keeps its batch composition
(`batch_prefills`, `batch_decodes`): its time is a cost τ(c, p) of the whole batch, never a
τ_k point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

ENGINE_FORWARD_RULE = "engine_forwards"
"""The marker rule name of engine forward annotations (a sentinel, not a regex)."""

_VLLM_DETAILED = re.compile(
    r"^execute_(?P<total>\d+)_context_(?P<nc>\d+)"
    r"\(sq(?P<cq>\d+)sk(?P<ck>\d+)sqsq\d+sqsk\d+\)"
    r"_generation_(?P<ng>\d+)\(sq(?P<gq>\d+)sk\d+sqsq\d+sqsk\d+\)$"
)
_VLLM_DEFAULT = re.compile(
    r"^execute_context_(?P<nc>\d+)\((?P<cq>\d+)(?:_\d+)?\)"
    r"_generation_(?P<ng>\d+)\((?P<gq>\d+)(?:_\d+)?\)$"
)
_SGLANG = re.compile(
    r"^step\[(?P<mode>EXTEND|MIXED|DECODE|IDLE|VERIFY|DRAFT|\w+) bs=(?P<bs>\d+)"
    r"(?P<rest>[^\]]*)\]$"
)
_FIELD = re.compile(r"(\w+)=(\d+)")
MAX_COUNT = 2**31 - 1
"""The largest token or request count a name may give (the chunks table's INTEGER columns): a
name such as `execute_context_1(99999999999999999999999)_...` is no forward (it overflowed
DuckDB's insert into a traceback; issue 36 round six)."""


@dataclass(frozen=True)
class Forward:
    """What one forward annotation says: prefill pieces and their tokens, decodes."""

    engine: str
    prefills: int
    query_tokens: int
    key_tokens: int | None
    decodes: int

    @property
    def prefix_tokens(self) -> int | None:
        if self.key_tokens is None:
            return None
        return max(self.key_tokens - self.query_tokens, 0)


def parse_forward(name: str) -> Forward | None:
    """The forward a host range name annotates, or None when it is none of the engines' forms
    (or computes no prefill token)."""
    if name.startswith("execute_"):
        m = _VLLM_DETAILED.match(name)
        if m:
            forward = Forward("vllm", int(m["nc"]), int(m["cq"]), int(m["ck"]), int(m["ng"]))
        elif m := _VLLM_DEFAULT.match(name):
            forward = Forward("vllm", int(m["nc"]), int(m["cq"]), None, int(m["ng"]))
        else:
            return None
    elif name.startswith("step["):
        m = _SGLANG.match(name)
        if m is None or m["mode"] not in ("EXTEND", "MIXED"):
            return None
        fields = dict(_FIELD.findall(m["rest"]))
        bs = int(m["bs"])
        query = fields.get("c_sq", fields.get("toks"))
        if query is None:
            return None
        key = fields.get("c_sk")
        decodes = int(fields.get("g", 0)) if m["mode"] == "MIXED" else 0
        prefills = int(fields.get("c", bs - decodes)) if m["mode"] == "MIXED" else bs
        forward = Forward("sglang", prefills, int(query), int(key) if key else None, decodes)
    else:
        return None
    counts = (forward.prefills, forward.query_tokens, forward.key_tokens or 0, forward.decodes)
    if max(counts) > MAX_COUNT:  # no engine forward holds 2^31 tokens: a corrupt name
        return None
    return forward if forward.prefills > 0 and forward.query_tokens > 0 else None


MARKER_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int32,
    "request_id": pl.String,
    "chunk_idx": pl.Int32,
    "vstage": pl.Int32,
    "tokens": pl.Int64,
    "prefix_tokens": pl.Int64,
    "batch_prefills": pl.Int32,
    "batch_decodes": pl.Int32,
    "m_start": pl.Int64,
    "m_end": pl.Int64,
}


def forward_markers(host: pl.DataFrame, vstage_of_rank: dict[int, int] | None) -> pl.DataFrame:
    """One marker per prefill-carrying forward of `host` (rank, name, start_ns, dur_ns), in the
    segmenter's marker schema plus the batch composition. Where two annotations of one forward
    nest (an engine range inside a wrapper's), the one that knows the prefix is kept, else the
    outer one."""
    names = host.get_column("name").unique().to_list()
    parsed = {n: f for n in names if (f := parse_forward(n)) is not None}
    if not parsed:
        return pl.DataFrame(schema=MARKER_SCHEMA)
    rows = (
        host.filter(pl.col("name").is_in(list(parsed)))
        .select("rank", "name", "start_ns", (pl.col("start_ns") + pl.col("dur_ns")).alias("end"))
        .sort("rank", "start_ns", pl.col("end"), descending=[False, False, True])
    )
    out = []
    for rank in rows.get_column("rank").unique().sort().to_list():
        kept: list[tuple[int, int, Forward]] = []
        for _, name, start, end in rows.filter(pl.col("rank") == rank).iter_rows():
            forward = parsed[name]
            if kept and start < kept[-1][1] and end <= kept[-1][1]:  # nested in the last one
                outer = kept[-1][2]
                if outer.key_tokens is None and forward.key_tokens is not None:
                    kept[-1] = (kept[-1][0], kept[-1][1], forward)
                continue
            kept.append((start, end, forward))
        out.extend(_chained(rank, kept, (vstage_of_rank or {}).get(rank, -1)))
    return pl.DataFrame(out, schema=MARKER_SCHEMA, orient="row")


def _chained(rank: int, forwards: list[tuple[int, int, Forward]], vstage: int) -> list[tuple]:
    """Rows for one rank's forwards in time order, requests inferred by prefix continuity."""
    rows = []
    open_requests: dict[int, tuple[str, int]] = {}  # next prefix -> (request, next k)
    for index, (start, end, f) in enumerate(forwards):
        single = f.prefills == 1 and f.decodes == 0
        prefix = f.prefix_tokens
        if single and prefix is not None and prefix in open_requests and prefix > 0:
            request, k = open_requests.pop(prefix)
        else:  # a new request; one seen from its middle gets k = prefix // tokens
            request, k = f"{f.engine}-fwd{index}", (prefix or 0) // f.query_tokens
        if single and prefix is not None:
            open_requests[prefix + f.query_tokens] = (request, k + 1)
        rows.append(
            (rank, request, k, vstage, f.query_tokens, prefix, f.prefills, f.decodes, start, end)
        )
    return rows
