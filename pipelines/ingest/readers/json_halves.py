"""A JSON array file cut in two at an entry boundary near its middle, each half written to a file
of its own as an array, so that two DuckDB connections parse the two halves on two threads.

DuckDB parses one JSON array on one thread however many it is given (a 500 MB trace_view.json:
twice the CPU on two threads and no shorter wall, docs/bench_ingest.md); two files are two
parses. The cut is the first `}` `,` `{` (whitespace allowed between them) at or past the
middle. Such a candidate can lie inside a string or inside a nested value of an entry; the first
half then ends inside that string or with a bracket left open, which no JSON reader accepts
(DuckDB: "unexpected end of data" / "unexpected character", tests/ingest/test_json_halves.py),
so a caller that reads the file whole whenever a half fails to parse never stores a wrong split.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
LOOK_BYTES = 16 << 20
"""How far past the middle a boundary is looked for (one entry is at most DuckDB's 16 MB object
limit on the first read)."""
_BLOCK = 8 << 20


def cut_point(path: Path) -> tuple[int, int] | None:
    """(end of the first half: one past its last entry's `}`, start of the second half: its
    first entry's `{`) for the first boundary at or past the middle of `path`; None when the
    file does not start with `[` (a BOM, the object form) or no boundary lies within
    LOOK_BYTES of the middle."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        if handle.read(1) != b"[":
            return None
        middle = size // 2
        handle.seek(middle)
        window = handle.read(LOOK_BYTES)
    found = _BOUNDARY.search(window)
    if found is None:
        return None
    return middle + found.start() + 1, middle + found.end() - 1


def write_part(
    source: Path, target: Path, start: int, end: int, head: bytes = b"", tail: bytes = b""
) -> None:
    """Bytes [start, end) of `source` written to `target` between `head` and `tail`, copied by
    the kernel where it can (os.copy_file_range: no pass through Python's memory)."""
    with source.open("rb") as src, target.open("wb", buffering=0) as dst:
        dst.write(head)
        offset = start
        copy = getattr(os, "copy_file_range", None)
        while copy is not None and offset < end:
            try:
                copied = copy(src.fileno(), dst.fileno(), end - offset, offset)
            except OSError:  # another file system, an old kernel: copied below
                break
            if copied == 0:
                break
            offset += copied
        src.seek(offset)
        while offset < end:
            block = src.read(min(_BLOCK, end - offset))
            if not block:
                raise OSError(f"{source}: ended at byte {offset}, before {end}")
            dst.write(block)
            offset += len(block)
        dst.write(tail)
