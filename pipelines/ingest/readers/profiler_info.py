"""profiler_info_N.json (rank, versions, collection time) and profiler_metadata.json (parallel
groups, distributed_args, the user's add_metadata keys) of a torch_npu `*_ascend_pt` folder.

Rank: `rank_id` is an int in older exports and a string in newer ones ("2"); -1 means a single
card. When `rank_id` is missing, the N of the file name `profiler_info_N.json` is used.
Group identity: HCCL names a communicator by its group id (a string); communication.json keys and
cluster files carry `double_hash(group_id)` (docs/ascend_formats.md §6), which links an op to its
parallel group (pp, tp, dp, ...) in `parallel_group_info`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines import memory_budget
from pipelines.ingest.errors import QuarantineError
from pipelines.vocabulary.profiler_names import CONVENTION_KEYS, double_hash

_INFO_NAME = re.compile(r"^profiler_info(?:_(\d+))?\.json$")


def rank_from_file_name(path: Path) -> int | None:
    """N of `profiler_info_N.json`, None for `profiler_info.json` or other names."""
    match = _INFO_NAME.match(path.name)
    return int(match.group(1)) if match and match.group(1) is not None else None


SMALL_JSON_SHARE = 8
"""A small JSON file (profiler_info, communication.json and its matrix, cluster and topology
files: kilobytes to a few MB in every real export here) is parsed whole by Python's json, which
holds ~3.5x the file (a 500 MB string in communication.json peaked at 1.74 GB RSS under a
512 MB budget): past this share of the ingest memory budget the file is `too_large`."""
SMALL_JSON_FLOOR = 16 << 20
"""The cap is never below 16 MiB, whatever the budget (a tiny --max-memory streams every trace;
it must not refuse a 1 KB profiler_info)."""


class TwiceKeyed(dict):
    """A JSON object as `load_json_file(..., note_twice=True)` reads it: `twice` names the keys
    given more than once with different values (Python's json keeps the last without a word; a
    key repeated with the same value is one key)."""

    twice: tuple[str, ...] = ()


def _note_twice(pairs: list[tuple[str, Any]]) -> TwiceKeyed:
    obj = TwiceKeyed()
    twice = []
    for key, value in pairs:
        if key in obj and obj[key] != value and key not in twice:
            twice.append(key)
        obj[key] = value
    obj.twice = tuple(twice)
    return obj


def twice_in(value: Any) -> str | None:
    """The first key given twice with two values anywhere inside `value` (read with
    note_twice=True), as 'a > b', None when there is none."""
    if isinstance(value, TwiceKeyed) and value.twice:
        return repr(value.twice[0])
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, inner in items:
        found = twice_in(inner)
        if found:
            return f"{key!r} > {found}"
    return None


def load_json_file(path: Path, *, note_twice: bool = False) -> Any:
    """Parse a small JSON file, raising QuarantineError with a reason code on failure. With
    `note_twice` its objects are TwiceKeyed: a reader names a key given twice (twice_in) and sets
    aside what holds it instead of reading the last value."""
    limit = max(SMALL_JSON_FLOOR, memory_budget.max_memory() // SMALL_JSON_SHARE)
    try:
        size = path.stat().st_size
        if size > limit:
            raise QuarantineError(
                "too_large",
                f"{path.name} is {size / 2**20:.0f} MiB; a small JSON file may take"
                f" {limit / 2**20:.0f} MiB (an eighth of the ingest memory budget, --max-memory,"
                " at least 16 MiB): not read",
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise QuarantineError("unreadable", str(exc)) from exc
    if not raw.strip():
        raise QuarantineError("empty_file", f"{path.name} has no content")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise QuarantineError("not_json", f"{path.name} is not UTF-8 text: {exc.reason}") from exc
    return parse_json_text(text, path.name, note_twice=note_twice)


def parse_json_text(text: str, name: str, *, note_twice: bool = False) -> Any:
    """json.loads with quarantine reasons: truncated_json when the error is at the very end."""
    try:
        return json.loads(text, object_pairs_hook=_note_twice if note_twice else None)
    except RecursionError:
        # a value nested past Python's recursion limit (~1,000 levels; no profiler writes more
        # than a few): the file, not the run (it failed the whole run as `read_error` before)
        raise QuarantineError(
            "invalid_json", f"{name}: a value nested too deep to read (past ~1,000 levels)"
        ) from None
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            raise QuarantineError("truncated_json", f"{name} ends before the JSON closes") from exc
        raise QuarantineError("invalid_json", f"{name}: {exc}") from exc


def _rank_ids_given(path: Path) -> list[Any]:
    """Every value the top level of a profiler_info file gives `rank_id` (a small file: read
    again with the key-value pairs kept in order)."""
    text = path.read_bytes().decode("utf-8-sig")
    top = json.loads(text, object_pairs_hook=lambda pairs: pairs)
    return [value for key, value in top if key == "rank_id"] if isinstance(top, list) else []


@dataclass
class ProfilerInfo:
    """What profiler_info_N.json says about one rank."""

    path: Path
    rank: int | None
    rank_problem: str | None = None  # set when rank_id was present but unusable
    software: dict[str, str] = field(default_factory=dict)
    collected_at: datetime | None = None
    profiler_level: str | None = None
    export_type: str | None = None


MAX_RANK = 2**31 - 1  # ranks are stored as INTEGER


def _parse_rank(value: Any) -> int | None:
    """int(str(x)) of a rank_id, None when it is not an integer or past an INTEGER (2^40 failed
    the whole run at the ranks table's INTEGER column, read_error; issue 36 round four)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        rank = int(str(value).strip())
    except ValueError:
        return None
    return rank if rank <= MAX_RANK else None


def read_profiler_info(path: Path) -> ProfilerInfo:
    """Read profiler_info[_N].json; rank_id first, the file-name N as fallback; -1 -> single card
    (rank 0 unless the file name says otherwise)."""
    data = load_json_file(path)
    if not isinstance(data, dict):
        raise QuarantineError("invalid_profiler_info", "top level is not a JSON object")
    from_name = rank_from_file_name(path)
    rank: int | None
    problem = None
    twice = _rank_ids_given(path)
    if len(set(map(repr, twice))) > 1:  # which one the writer meant is unknown (json kept the
        # last without a word: issue 36 round five), as a trace entry's key given twice
        problem = f"rank_id is given {len(twice)} times ({', '.join(map(repr, twice))})"
        rank = from_name
    elif "rank_id" in data:
        rank = _parse_rank(data["rank_id"])
        if rank is None:
            problem = f"rank_id {data['rank_id']!r} is not an integer"
            rank = from_name
        elif rank < 0:
            rank = from_name if from_name is not None else 0
    else:
        rank = from_name
    software = {
        key.removesuffix("_version"): str(value)
        for key, value in data.items()
        if key.endswith("_version") and value not in (None, "")
    }
    end_ns = (data.get("end_info") or {}).get("collectionTimeEnd")
    collected_at = None
    if isinstance(end_ns, int | float | str) and str(end_ns).strip().isdigit():
        collected_at = datetime.fromtimestamp(int(end_ns) / 1e9, tz=UTC).replace(tzinfo=None)
    experimental = (data.get("config") or {}).get("experimental_config") or {}
    export = experimental.get("_export_type")
    if isinstance(export, list):
        export = ",".join(str(x) for x in export)
    return ProfilerInfo(
        path=path,
        rank=rank,
        rank_problem=problem,
        software=software,
        collected_at=collected_at,
        profiler_level=experimental.get("_profiler_level"),
        export_type=export,
    )


@dataclass(frozen=True)
class ParallelGroup:
    """One communicator: its HCCL group id, kind (pp, tp, dp, ...), members, and hash."""

    group_id: str
    kind: str
    global_ranks: tuple[int, ...]
    group_rank: int | None = None

    @property
    def hash(self) -> str:
        return str(double_hash(self.group_id))

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.kind,
            "ranks": list(self.global_ranks),
            "group_id": self.group_id,
            "hash": self.hash,
        }


@dataclass
class ProfilerMetadata:
    """profiler_metadata.json: parallel groups, distributed_args and the convention keys."""

    path: Path
    groups: list[ParallelGroup] = field(default_factory=list)
    distributed_args: dict[str, Any] = field(default_factory=dict)
    conventions: dict[str, str] = field(default_factory=dict)


def read_profiler_metadata(path: Path) -> ProfilerMetadata:
    """Read profiler_metadata.json (written by add_metadata and MindSpeed)."""
    data = load_json_file(path)
    if not isinstance(data, dict):
        raise QuarantineError("invalid_metadata", "top level is not a JSON object")
    groups = []
    for group_id, info in (data.get("parallel_group_info") or {}).items():
        if not isinstance(info, dict):
            continue
        ranks = tuple(int(r) for r in info.get("global_ranks") or [] if _parse_rank(r) is not None)
        groups.append(
            ParallelGroup(
                group_id=str(group_id),
                kind=str(info.get("group_name") or "unknown"),
                global_ranks=ranks,
                group_rank=_parse_rank(info.get("group_rank")),
            )
        )
    conventions = {
        key: str(data[key]) for key in CONVENTION_KEYS if data.get(key) not in (None, "")
    }
    args = data.get("distributed_args")
    return ProfilerMetadata(
        path=path,
        groups=groups,
        distributed_args=args if isinstance(args, dict) else {},
        conventions=conventions,
    )


def groups_by_hash(groups: list[ParallelGroup]) -> dict[str, ParallelGroup]:
    """Group hash (as written after `@` in communication.json) -> group."""
    return {g.hash: g for g in groups}


def group_by_suffix(groups: list[ParallelGroup], suffix: str) -> ParallelGroup | None:
    """The one group whose hash ends in the 3-digit `suffix` of an hcom op name, if unique."""
    matches = {g.hash: g for g in groups if g.hash.endswith(suffix)}
    return next(iter(matches.values())) if len(matches) == 1 else None


_RANK_FOLDER_STAMP = re.compile(r"_(\d{14}|\d{17})_ascend_pt$")
_PROF_FOLDER_STAMP = re.compile(r"^PROF_\d+_(\d{14}|\d{17})_")


def _stamp_time(digits: str) -> datetime | None:
    try:
        when = datetime.strptime(digits[:14], "%Y%m%d%H%M%S")
    except ValueError:
        return None
    if len(digits) == 17:
        when = when.replace(microsecond=int(digits[14:]) * 1000)
    return when if 2000 <= when.year <= 2100 else None


def collected_at_from_names(rank_dir: Path) -> datetime | None:
    """The collection time torch_npu writes into folder names, for exports whose
    profiler_info has no `collectionTimeEnd`: `<host>_<pid>_<YYYYmmddHHMMSS[mmm]>_ascend_pt`,
    else the first `PROF_<n>_<YYYYmmddHHMMSS[mmm]>_<rand>` inside it (docs/ascend_formats.md).
    The stamp is the collecting host's local time, so it can be hours off UTC: good enough to
    order nights, not to compare with UTC clocks. None when no name carries a valid stamp."""
    match = _RANK_FOLDER_STAMP.search(rank_dir.name)
    names = [match.group(1)] if match else []
    for sub in sorted(rank_dir.glob("PROF_*")):
        found = _PROF_FOLDER_STAMP.match(sub.name)
        if found and sub.is_dir():
            names.append(found.group(1))
    for digits in names:
        when = _stamp_time(digits)
        if when is not None:
            return when
    return None


def find_profiler_info(rank_dir: Path) -> Path | None:
    """The profiler_info[_N].json of a rank folder, if any."""
    found = sorted(p for p in rank_dir.glob("profiler_info*.json") if _INFO_NAME.match(p.name))
    return found[0] if found else None
