"""Run ids from what the profiler recorded (docs/run_identity.md "Run ids").

    <reader>-<name>[-<YYYYmmdd-HHMM>]-<12 hex>

* reader: the source the run was read with (`ascend-pt`, `ascend-db`, `kineto`,
  `msprof-cluster`, `topology`);
* name: the run's configuration when the profiler's metadata carries it (model, schedule,
  sequence length: the convention keys of profiler_metadata.json, or of a Kineto trace), else the
  profiler's own worker name: the common stem of the rank folders torch_npu writes as
  `{host}_{pid}_{YYYYmmddHHMMSSfff}_ascend_pt` (the host), or of Kineto's
  `<worker>.<timestamp>.pt.trace.json` files; a lone export (kernel_details.csv alone) has only
  its folder's name;
* the collection time when the profiler recorded one (profiler_info's `collectionTimeEnd`, else
  the stamp in the folder names, earliest rank; a Kineto trace's first event);
* 12 hex digits of sha256(origin, content hash): the same bytes in two folders stay two runs.

At most 60 characters, lower-case, `[a-z0-9-]` only; when the name does not fit, the model's
last words are dropped first (`qwen3-coder-30b-a3b` -> `qwen3`). A rank-folder run's name is read
from its small profiler files only (never the traces), so `tracereplay ingest` and the per-rank
lake writers (per_rank.plan_run) give a run the same id before any trace is parsed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pipelines.ingest.discover import RankInput, RunInput
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers.ascend_text import METADATA, OUTPUT_DIR
from pipelines.ingest.readers.profiler_info import (
    collected_at_from_names,
    find_profiler_info,
    read_profiler_info,
    read_profiler_metadata,
)
from pipelines.paths import stored_path

MAX_ID_CHARS = 60
HASH_HEX = 12
READER_LABELS = {
    "ascend_pt": "ascend-pt",
    "ascend_pt_db": "ascend-db",
    "kineto": "kineto",
    "cluster": "msprof-cluster",
    "topology": "topology",
}
NAME_KEYS = ("model", "schedule", "seq_len")
_KINETO_STAMP = re.compile(r"\.\d+$")  # <worker>.<time>.pt.trace.json
_TRAILING_NUMBER = re.compile(r"_\d+$")  # torch_npu's stamp, the pid of {host}_{pid}
_KINETO_SUFFIX = re.compile(r"([._-]pt)?[._-]trace$")


def slug(text: str) -> str:
    """Lower-case `[a-z0-9-]` of `text`, runs of anything else as one '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def worker_stem(name: str) -> str:
    """The worker part of a profiler folder or trace file name: `host_123_20250109065044123_
    ascend_pt` -> `host`, `host_123.1694039959123.pt.trace.json` -> `host` (stamps and pids
    after '_' or '.' dropped; `node-7` keeps its number), any other name as it is."""
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    name = _KINETO_SUFFIX.sub("", name.removesuffix("_ascend_pt"))
    name = _KINETO_STAMP.sub("", name)
    while (cut := _TRAILING_NUMBER.sub("", name)) != name and cut:
        name = cut
    return name


def _common_stem(names: list[str]) -> str:
    """The stem the workers share (`rank0`, `rank1` -> `rank`), else the first one's."""
    stems = [slug(worker_stem(n)) for n in names]
    stems = [s for s in stems if s]
    if not stems:
        return ""
    shared = stems[0]
    for stem in stems[1:]:
        size = next((i for i, (a, b) in enumerate(zip(shared, stem, strict=False)) if a != b), None)
        shared = shared[: min(len(shared), len(stem)) if size is None else size]
    return shared.strip("-") or stems[0]


def _rank_folder_name(rank: RankInput) -> str:
    return rank.path.parent.name if rank.path.name == OUTPUT_DIR else rank.path.name


def profiler_facts(run: RunInput) -> dict[str, Any]:
    """model / schedule / seq_len and collected_at from a rank-folder run's small profiler files
    (profiler_metadata.json, profiler_info_N.json, folder-name stamps). A file that cannot be
    read is left out here; its reader reports it."""
    facts: dict[str, Any] = {}
    times: list[datetime] = []
    for rank in run.ranks:
        folder = rank.path.parent if rank.path.name == OUTPUT_DIR else rank.path
        when = None
        info = find_profiler_info(folder)
        if info is not None:
            try:
                when = read_profiler_info(info).collected_at
            except QuarantineError:
                when = None
        when = when or collected_at_from_names(folder)
        if when is not None:
            times.append(when)
        if not facts and (folder / METADATA).is_file():
            try:
                conventions = read_profiler_metadata(folder / METADATA).conventions
            except QuarantineError:
                conventions = {}
            facts.update({k: conventions[k] for k in NAME_KEYS if conventions.get(k)})
    if times:
        facts["collected_at"] = min(times)
    return facts


def _tokens(value: Any) -> str:
    try:
        n = int(str(value))
    except ValueError:
        return str(value)
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def _fit(text: str, room: int) -> str:
    """`text` in at most `room` characters: whole '-' words dropped from the end, else cut."""
    if len(text) <= room:
        return text
    words = text.split("-")
    while len(words) > 1 and len("-".join(words)) > room:
        words.pop()
    return "-".join(words)[:room].strip("-")


def _configuration(facts: Mapping[str, Any], room: int) -> str:
    """`model-schedule-seq` in at most `room` characters (the model's last words go first:
    `qwen3-coder-30b-a3b` -> `qwen3`)."""
    tail = [slug(str(facts["schedule"]))] if facts.get("schedule") else []
    if facts.get("seq_len"):
        tail.append(slug(_tokens(facts["seq_len"])))
    tail_text = "-".join(t for t in tail if t)
    model = slug(str(facts.get("model") or ""))
    if model and tail_text:
        model = _fit(model, room - len(tail_text) - 1) if room > len(tail_text) + 1 else ""
    return _fit("-".join(p for p in (model, tail_text) if p), room)


def run_stem(run: RunInput, facts: Mapping[str, Any] | None = None) -> str:
    """The readable part of the run id (everything but the hash). A rank-folder run's facts come
    from its profiler files (`profiler_facts`); other runs (Kineto, cluster summaries) pass the
    facts their reader found (`facts`: model, schedule, seq_len, collected_at)."""
    known = profiler_facts(run) if run.ranks else dict(facts or {})
    reader = READER_LABELS.get(run.source, slug(run.source)) or "run"
    when = known.get("collected_at")
    stamp = when.strftime("%Y%m%d-%H%M") if isinstance(when, datetime) else ""
    room = MAX_ID_CHARS - HASH_HEX - 1 - len(reader) - 1 - (len(stamp) + 1 if stamp else 0)
    name = _configuration(known, room) if any(known.get(k) for k in NAME_KEYS) else ""
    if not name:
        if run.ranks:
            workers = [_rank_folder_name(r) for r in run.ranks]
        elif run.kineto_files:
            workers = [p.name for p in run.kineto_files]
        else:
            workers = []
        name = _fit(_common_stem(workers), room)
    return "-".join(p for p in (reader, name, stamp) if p)


def run_id_for(run: RunInput, content: str, facts: Mapping[str, Any] | None = None) -> str:
    """`<run_stem>-<12 hex of sha256(origin, content hash)>` of a run read from `run.origin`."""
    return f"{run_stem(run, facts)}-{origin_hash(run.origin, content)}"


def origin_hash(origin: Path | str, content: str) -> str:
    """The 12 hex digits a run id ends in (origin + content hash)."""
    return hashlib.sha256(f"{stored_path(origin)}\0{content}".encode()).hexdigest()[:HASH_HEX]
