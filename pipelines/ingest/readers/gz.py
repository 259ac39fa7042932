"""gzip input with bytes after its stream: where the gzip members end, and a copy without the rest.

A `.gz` can be whole and still be followed by bytes that are no gzip member: zeros a transfer or
a block device padded it with, or stray bytes appended to it. gzip(1) inflates such a file and
warns "trailing garbage ignored"; Python's gzip module accepts trailing zeros but refuses other
bytes, and DuckDB refuses both ("Input is not a GZIP stream"), so a trace whose JSON is whole was
quarantined as invalid_json. Here the members are walked with zlib, the offset where the last one
ends is found, and a reader is given a copy cut at that offset (docs/ingest_rules.md).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipelines import memory_budget

GZIP_MAGIC = b"\x1f\x8b"
GZIP_IN_GZIP_DETAIL = "its inflated bytes are gzip again (a .gz of a .gz): gunzip it once"
"""What a .gz whose inflated bytes start with GZIP_MAGIC is told (issue 36 round six)."""
_BLOCK = 1 << 20


@dataclass(frozen=True)
class GzipScan:
    """One pass over a .gz: the bytes it inflates to, where its gzip data ends, and the size."""

    inflated: int
    data_end: int
    size: int

    @property
    def trailing(self) -> int:
        """Bytes after the last gzip member (0: none)."""
        return self.size - self.data_end


def scan(path: Path, on_block: Callable[[bytes], None] | None = None) -> GzipScan:
    """Inflate every gzip member of `path` (calling `on_block` with the inflated bytes) and stop
    at the first byte that starts no member. Raises zlib.error / EOFError for a member that is
    broken or cut off, ValueError when the file does not start with a gzip member."""
    inflated = 0
    consumed = 0  # compressed bytes of the members finished so far
    with path.open("rb") as handle:
        pending = handle.read(_BLOCK)
        if not pending.startswith(GZIP_MAGIC):
            raise ValueError(f"{path.name} does not start with a gzip member")
        while pending:
            inflater = zlib.decompressobj(wbits=31)  # one gzip member
            used = 0
            while not inflater.eof:
                if not pending:
                    pending = handle.read(_BLOCK)
                    if not pending:
                        raise EOFError("compressed file ended before the end-of-stream marker")
                # at most one block out per call: a 1 MiB input can inflate to a gigabyte
                block = inflater.decompress(pending, _BLOCK)
                left = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
                used += len(pending) - len(left)
                pending = left
                inflated += len(block)
                if on_block and block:
                    on_block(block)
            consumed += used
            if not pending:
                pending = handle.read(_BLOCK)
            if not pending.startswith(GZIP_MAGIC):
                break
        size = path.stat().st_size
    return GzipScan(inflated, consumed, size)


def without_trailing(path: Path, data_end: int) -> Path:
    """A copy of `path` cut at `data_end` (same name, in a spill folder removed after the run)."""
    target = memory_budget.new_spill_dir() / path.name
    with path.open("rb") as source, target.open("wb") as out:
        left = data_end
        while left > 0:
            block = source.read(min(_BLOCK, left))
            if not block:
                break
            out.write(block)
            left -= len(block)
    return target
