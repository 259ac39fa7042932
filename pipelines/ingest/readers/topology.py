"""Topology-only inputs: a folder with profiler_metadata.json and/or communication_group.json but no
traces -> a run with ranks, their pipeline stage and group memberships, and tp/pp/dp/world_size.

profiler_metadata.json (MindSpeed, one rank's view): `distributed_args` (tp/pp/dp sizes, rank,
world_size) and `parallel_group_info` {group_id: {group_name, group_rank, global_ranks}} — only
the groups the writing rank belongs to.
communication_group.json (msprof-analyze cluster): old format `{"collective": [[ranks]...],
"p2p": [[ranks]...]}`; new format adds `comm_group_parallel_info` [{type, rank_set, group_name
(= double_hash(group_id)), group_id, pg_name (tp, pp, dp, ...)}].

Pipeline stage of a rank = its position in its `pp` group (groups list ranks in pipeline order);
ranks no pp group covers get the Megatron layout's stage, rank // (world_size / pp), but only
when that layout agrees with every pp group that is known."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.frames import Quarantined, RunFrames
from pipelines.ingest.readers.profiler_info import (
    ProfilerMetadata,
    double_hash,
    load_json_file,
    read_profiler_metadata,
)

METADATA_FILE = "profiler_metadata.json"
GROUP_FILE_GLOB = "communication_group*.json"
NO_TOPOLOGY = "no_topology"
INVALID_GROUPS = "invalid_communication_group"


@dataclass(frozen=True)
class Group:
    """One communication group: its kind (pp, tp, dp, ... or 'collective'/'p2p' when the file does
    not say), member global ranks in the file's order, and its HCCL identity when known."""

    kind: str
    ranks: tuple[int, ...]
    group_id: str | None = None
    hash: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.kind, "ranks": list(self.ranks)}
        if self.group_id:
            out["group_id"] = self.group_id
        if self.hash:
            out["hash"] = self.hash
        return out


_MAX_RANK = 2**31 - 1  # the stores' INTEGER rank


def _ranks(values: Any) -> tuple[int, ...] | None:
    return _group_ranks(values)[0]


def _group_ranks(values: Any) -> tuple[tuple[int, ...] | None, str | None]:
    """A group's ranks and, when it is no group, why (None for an empty list: no group, nothing
    to say). A rank is a whole number from 0 to INTEGER's end, in digits or as text of digits;
    each rank once (issue 36 round seven: `"x"`, `8.5`, a nested list or `null` left the group
    out without a word, `-1` made a rank -1, 2^40 failed every group of the file, and `[0, 0, 8]`
    was stored as written)."""
    if values is None or values == []:
        return None, None if values == [] else "is null, no list of ranks"
    if not isinstance(values, list):
        return None, f"{str(values)[:40]!r} is no list of ranks"
    ranks = []
    for value in values:
        text = str(value)
        if isinstance(value, bool) or not isinstance(value, int | str) or not text.isdigit():
            return None, f"holds {text[:40]!r}, no rank"
        if not text.isascii() or int(text) > _MAX_RANK:
            return None, f"holds {text[:40]!r}, no rank"
        ranks.append(int(text))
    twice = sorted({rank for rank in ranks if ranks.count(rank) > 1})
    if twice:
        return None, f"names rank {twice[0]} twice"
    return tuple(ranks), None


_GROUP_KEYS = ("collective", "p2p", "comm_group_parallel_info")


def _keys_twice(path: Path) -> str | None:
    """The first group key the file's top level gives twice (Python's json kept the last one
    without a word: issue 36 round seven), None when none is; the file is small (it was just
    read by load_json_file)."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in items]
        found.extend(k for k in _GROUP_KEYS if keys.count(k) > 1)
        return dict(items)

    json.loads(path.read_bytes().decode("utf-8-sig"), object_pairs_hook=pairs)
    return found[0] if found else None


def read_communication_group(path: Path) -> list[Group]:
    """Groups of communication_group.json (old or new format); QuarantineError if it is none."""
    return read_communication_group_rows(path)[0]


def read_communication_group_rows(path: Path) -> tuple[list[Group], list[str]]:
    """The groups of read_communication_group and one `where: why` per group left out (a group
    that is no list of ranks costs itself, named, not the file's other groups)."""
    data = load_json_file(path)
    if not isinstance(data, dict) or not any(k in data for k in _GROUP_KEYS):
        raise QuarantineError(INVALID_GROUPS, f"{path.name}: no collective/p2p group lists")
    twice = _keys_twice(path)
    if twice:
        raise QuarantineError(
            INVALID_GROUPS,
            f"{path.name}: {twice!r} is given twice: which groups the writer meant is unknown",
        )
    groups: list[Group] = []
    set_aside: list[str] = []
    named = data.get("comm_group_parallel_info")
    if isinstance(named, list) and named:
        for i, entry in enumerate(named):
            ranks, why = (
                _group_ranks(entry.get("rank_set"))
                if isinstance(entry, dict)
                else (None, "is no object")
            )
            if ranks is None:
                if why:
                    set_aside.append(f"comm_group_parallel_info[{i}] {why}")
                continue
            group_id = str(entry.get("group_id") or "") or None
            given = str(entry.get("group_name") or "") or None
            kind = str(entry.get("pg_name") or "") or str(entry.get("type") or "collective")
            groups.append(
                Group(
                    kind=kind,
                    ranks=ranks,
                    group_id=group_id,
                    hash=given or (str(double_hash(group_id)) if group_id else None),
                )
            )
        return _unique(groups), set_aside
    for kind in ("collective", "p2p"):
        lists = data.get(kind)
        if lists is not None and not isinstance(lists, list):
            set_aside.append(f"{kind}: {str(lists)[:40]!r} is no list of groups")
            continue
        for i, ranks in enumerate(lists or []):
            parsed, why = _group_ranks(ranks)
            if parsed is not None:
                groups.append(Group(kind=kind, ranks=parsed))
            elif why:
                set_aside.append(f"{kind}[{i}] {why}")
    return _unique(groups), set_aside


def _unique(groups: Iterable[Group]) -> list[Group]:
    seen: set[tuple[str, tuple[int, ...], str | None]] = set()
    out = []
    for g in groups:
        key = (g.kind, g.ranks, g.hash)
        if key not in seen:
            seen.add(key)
            out.append(g)
    return out


def metadata_groups(metadata: ProfilerMetadata) -> list[Group]:
    """The parallel groups of profiler_metadata.json as Groups."""
    return _unique(
        Group(kind=g.kind, ranks=tuple(g.global_ranks), group_id=g.group_id, hash=g.hash)
        for g in metadata.groups
        if g.global_ranks
    )


def _size(groups: Sequence[Group], kind: str) -> int | None:
    sizes = Counter(len(g.ranks) for g in groups if g.kind == kind)
    return sizes.most_common(1)[0][0] if sizes else None


def pp_stages(groups: Sequence[Group], world_size: int | None, pp: int | None) -> dict[int, int]:
    """Rank -> pipeline stage: position in its pp group, then the Megatron layout for the rest
    (only if it agrees with every known pp group)."""
    stage: dict[int, int] = {}
    for g in groups:
        if g.kind == "pp":
            for position, rank in enumerate(g.ranks):
                stage.setdefault(rank, position)
    if world_size and pp and pp > 0 and world_size % pp == 0:
        per_stage = world_size // pp
        if all(stage[r] == r // per_stage for r in stage):
            for rank in range(world_size):
                stage.setdefault(rank, rank // per_stage)
    return stage


def ranks_frame(
    ranks: Iterable[int], groups: Sequence[Group], stages: dict[int, int]
) -> pl.DataFrame:
    """The canonical ranks rows (without run_id): rank, pp_stage, groups (JSON list of the
    multi-rank groups the rank belongs to)."""
    rows = []
    for rank in sorted(set(ranks)):
        member = [g.as_json() for g in groups if rank in g.ranks and len(g.ranks) > 1]
        rows.append(
            {
                "rank": rank,
                "pp_stage": stages.get(rank),
                "groups": json.dumps(member) if member else None,
            }
        )
    return pl.DataFrame(rows, schema={"rank": pl.Int32, "pp_stage": pl.Int32, "groups": pl.String})


def topology_files(source: Path | Sequence[Path]) -> list[Path]:
    """The topology files of a folder (or the given files)."""
    if isinstance(source, Path | str):
        path = Path(source)
        if path.is_dir():
            found = [path / METADATA_FILE] if (path / METADATA_FILE).is_file() else []
            return found + sorted(path.glob(GROUP_FILE_GLOB))
        return [path]
    return [Path(p) for p in source]


def read_topology(source: Path | Sequence[Path]) -> RunFrames:
    """A topology-only run from a folder (or list) of profiler_metadata.json /
    communication_group*.json files. The run row carries source='topology', origin, tp, pp, dp,
    world_size and the metadata convention keys; run_id and content_hash are left to the
    assembler. Files that cannot be read are listed in `quarantined`; when none is usable a
    QuarantineError(no_topology) is raised."""
    files = topology_files(source)
    groups: list[Group] = []
    args: dict[str, Any] = {}
    conventions: dict[str, str] = {}
    quarantined: list[Quarantined] = []
    # the new-format file first, so its named groups win over an old-format twin
    for path in sorted(files, key=lambda p: (p.name != METADATA_FILE, "old" in p.name, p.name)):
        try:
            if path.name == METADATA_FILE:
                metadata = read_profiler_metadata(path)
                groups += metadata_groups(metadata)
                args = metadata.distributed_args or args
                conventions.update(metadata.conventions)
            else:
                found = read_communication_group(path)
                named = any(g.hash for g in groups)
                groups += [g for g in found if not (named and g.hash is None)]
        except QuarantineError as err:
            quarantined.append(err.quarantined(path))
    groups = _unique(groups)
    if not groups and not args:
        reasons = "; ".join(f"{q.path}: {q.reason}" for q in quarantined) or "no topology files"
        raise QuarantineError(NO_TOPOLOGY, reasons)
    run = topology_run(groups, args)
    run |= {
        "source": "topology",
        "origin": str(source if isinstance(source, Path | str) else files[0].parent),
    }
    run |= _convention_columns(conventions, run)
    world = run.get("world_size")
    members = {r for g in groups for r in g.ranks} | (set(range(world)) if world else set())
    stages = pp_stages(groups, world, run.get("pp"))
    return RunFrames(
        run=run,
        tables={"ranks": ranks_frame(members, groups, stages)},
        quarantined=quarantined,
    )


def topology_run(groups: Sequence[Group], args: dict[str, Any]) -> dict[str, Any]:
    """tp / pp / dp / world_size: distributed_args when present, else the sizes of the tp / pp /
    dp groups and the set of ranks they cover."""

    def arg(key: str) -> int | None:
        value = args.get(key)
        return int(value) if isinstance(value, int | str) and str(value).isdigit() else None

    members = {r for g in groups for r in g.ranks}
    world = arg("world_size") or (max(members) + 1 if members else None)
    tp = arg("tensor_model_parallel_size") or _size(groups, "tp")
    pp = arg("pipeline_model_parallel_size") or _size(groups, "pp")
    dp = arg("data_parallel_size") or _size(groups, "dp")
    if world and tp and pp and not dp and world % (tp * pp) == 0:
        dp = world // (tp * pp)
    return {"tp": tp, "pp": pp, "dp": dp, "world_size": world}


def _convention_columns(conventions: dict[str, str], run: dict[str, Any]) -> dict[str, Any]:
    """runs columns from the user's add_metadata keys (docs/tau_k.md §1); tp/pp only fill
    what the distributed args and groups left open."""
    out: dict[str, Any] = {}
    for key in ("model", "schedule"):
        if conventions.get(key):
            out[key] = conventions[key]
    for key in ("chunk_size", "seq_len", "vp", "tp", "pp"):
        value = conventions.get(key, "").strip()
        if value.isdigit() and (key not in ("tp", "pp") or run.get(key) is None):
            out[key] = int(value)
    return out
