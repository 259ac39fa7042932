"""The entries of a JSON array found by its structure alone, so that one entry that is no valid
JSON (a raw control character or a lone UTF-16 surrogate escape inside a string: both readers,
DuckDB's and msgspec's, refuse the whole text for it) costs that entry, not the file.

Outside strings, JSON's structure is its brackets and commas; strings run from an unescaped
quote to the next (json_long_strings explains the pairing). So the unescaped quotes, found with
numpy one block at a time, tell which `[ ] { } ,` bytes are structure; the commas at depth one
of the top-level array separate its entries. A text whose quotes do not pair up or whose
brackets do not close is not split (None): it stays one unreadable file."""

from __future__ import annotations

import re
from itertools import pairwise

import numpy as np

from pipelines.ingest.readers.json_long_strings import trailing_backslashes, unescaped_quotes

BLOCK = 1 << 24
_OPEN = (ord("["), ord("{"))
_CLOSE = (ord("]"), ord("}"))
_COMMA = ord(",")
_STRUCTURE = np.zeros(256, dtype=bool)
_STRUCTURE[[*_OPEN, *_CLOSE, _COMMA]] = True


def _structure(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The structure bytes of `data` outside strings: (the bytes, their offsets, their kinds, the
    depth after each); None when the quotes do not pair up."""
    buffer = np.frombuffer(data, dtype=np.uint8)
    quotes, marks = [], []
    backslashes = 0
    for start in range(0, buffer.size, BLOCK):
        block = buffer[start : start + BLOCK]
        quotes.append(unescaped_quotes(block, backslashes) + start)
        marks.append(np.flatnonzero(_STRUCTURE[block]) + start)
        backslashes = trailing_backslashes(block, backslashes)
    quote_at = np.concatenate(quotes) if quotes else np.empty(0, dtype=np.int64)
    mark_at = np.concatenate(marks) if marks else np.empty(0, dtype=np.int64)
    if quote_at.size % 2:
        return None
    # a mark with an odd number of quotes before it is inside a string
    mark_at = mark_at[np.searchsorted(quote_at, mark_at) % 2 == 0]
    kinds = buffer[mark_at]
    step = np.where(np.isin(kinds, _OPEN), 1, np.where(np.isin(kinds, _CLOSE), -1, 0))
    return buffer, mark_at, kinds, np.cumsum(step)


def split_array(data: bytes) -> list[bytes] | None:
    """The entries of the JSON array `data` (leading whitespace allowed), each its own bytes
    stripped of surrounding whitespace; None when the text is not an array whose strings and
    brackets pair up."""
    found = _structure(data)
    if found is None:
        return None
    buffer, mark_at, kinds, depth = found
    if mark_at.size == 0 or buffer[mark_at[0]] != _OPEN[0]:
        return None
    closed = np.flatnonzero(depth == 0)
    if closed.size == 0 or np.any(depth < 0) or data[mark_at[closed[0]] + 1 :].strip():
        return None  # the array never closes, closes twice, or text follows it
    end = int(closed[0])
    if np.any(depth[:end] < 1):
        return None
    commas = mark_at[:end][(kinds[:end] == _COMMA) & (depth[:end] == 1)]
    bounds = [int(mark_at[0]), *(int(c) for c in commas), int(mark_at[end])]
    entries = [data[a + 1 : b].strip() for a, b in pairwise(bounds)]
    if entries == [b""]:
        return []
    return entries


def member_array(data: bytes, key: str) -> tuple[int, int] | None:
    """Offsets of the opening and closing bracket of the array that is member `key` of the JSON
    object `data` (a Kineto trace's `traceEvents`); None when `data` is not an object whose
    strings and brackets pair up or holds no such member."""
    found = _structure(data)
    if found is None:
        return None
    buffer, mark_at, kinds, depth = found
    if mark_at.size == 0 or buffer[mark_at[0]] != _OPEN[1] or np.any(depth < 0):
        return None
    name = re.compile(rb'"' + re.escape(key.encode()) + rb'"\s*:\s*$')
    for i in np.flatnonzero((kinds == _OPEN[0]) & (depth == 2)):
        at = int(mark_at[i])
        if not name.search(data[max(0, at - len(key) - 64) : at]):
            continue
        after = np.flatnonzero(depth[i + 1 :] == 1)
        if after.size == 0 or kinds[i + 1 + after[0]] != _CLOSE[0]:
            return None
        return at, int(mark_at[i + 1 + after[0]])
    return None
