"""Trace entries that give one key twice, found without decoding them in Python.

msgspec, which decodes the object form of trace_view.json, JSON-number timestamps and every Kineto
trace, keeps the last of two equal keys without a word (`{"ts": "1", "ts": "2"}` is ts 2), where
DuckDB's `read_json` refuses the record. Which value the writer meant is unknown, so such an
entry is set aside as `duplicate_key` on every parse path (docs/ingest_rules.md). The check runs
DuckDB's `json_keys` (yyjson keeps every key of an object, in order) over the raw entries in one
vectorised pass: about 1 s per 130 MB of entries on one thread here (a 133 MB trace_view.json of
606,720 entries: 0.15 s to lay the entries out, 0.9 s for the query).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np
import pyarrow as pa

from pipelines.store.duck import scratch_connection

# the positions travel as a column: a row_number() window would hold every entry's key list
_QUERY = """
    select position, keys
    from (select position, json_keys(entry) as keys from entries)
    where len(keys) <> len(list_distinct(keys))
    order by position
"""


def duplicate_keys(entries: Sequence[msgspec.Raw | bytes]) -> dict[int, list[str]]:
    """Position -> the keys given more than once, for each entry (a JSON object) that repeats a
    key at its top level; empty when none does."""
    if not entries:
        return {}
    offsets = np.zeros(len(entries) + 1, dtype=np.int64)
    np.cumsum([len(entry) for entry in entries], out=offsets[1:])
    column = pa.LargeStringArray.from_buffers(
        len(entries), pa.py_buffer(offsets), pa.py_buffer(b"".join(entries))
    )
    con = scratch_connection(("set threads = 1",))
    try:
        positions = pa.array(np.arange(len(entries), dtype=np.int64))
        con.register("entries", pa.table({"position": positions, "entry": column}))
        rows = con.execute(_QUERY).fetchall()
    finally:
        con.close()
    return {
        int(position): sorted({key for key in keys if keys.count(key) > 1})
        for position, keys in rows
    }


_LINE = ": duplicate key "


def duplicate_line(position: int, keys: list[str]) -> str:
    """The quarantine line of an entry that gives `keys` twice."""
    return f"traceEvents[{position}]{_LINE}{', '.join(map(repr, keys))}"


def is_duplicate_line(line: str) -> bool:
    """Whether a set-aside line is a `duplicate_line` (counted as duplicate_key)."""
    return _LINE in line
