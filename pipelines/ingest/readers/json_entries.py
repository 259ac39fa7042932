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
from collections.abc import Iterator
from itertools import pairwise
from typing import BinaryIO

import numpy as np

from pipelines.ingest.readers.json_long_strings import trailing_backslashes, unescaped_quotes

BLOCK = 1 << 24
BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark, allowed before the JSON text
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


class BrokenStructure(ValueError):
    """The brackets of the text fed to an ArrayStream do not pair up where the array is read."""


class TooLarge(ValueError):
    """The text outside the array read by an ArrayStream passes what it may hold."""


class ArrayStream:
    """The entries of one JSON array of a text fed block by block, in bounded memory: the
    top-level array itself, or the array that is member `key` of the top-level object (a
    Kineto trace's `traceEvents`), whichever the text's first bracket says it holds.

    The same structure scan as `split_array`, with its state carried across blocks: the depth,
    whether a string is open, and the run of backslashes that ended the block. `feed` returns
    the entries a block completes (each its bytes, stripped of surrounding whitespace), an int
    in place of an entry past `max_entry` bytes (its size: the entry is not held), and keeps
    the text outside the array, with the array as `[]`, in `rest` (at most `max_rest` bytes:
    past it TooLarge). `finish` says whether the text ended whole."""

    def __init__(self, key: str, max_entry: int, max_rest: int) -> None:
        self.key = key
        self.max_entry, self.max_rest = max_entry, max_rest
        self.depth = 0
        self.in_string = False
        self.backslashes = 0
        self.level = 0  # the depth inside the array: 1 (a bare array) or 2 (a member)
        self.phase = "before"  # before the array, inside it, after it
        self.rest = bytearray()
        self.pending: list[bytes] = []
        self.pending_size = 0
        self.entries = 0  # entries returned so far (oversized ones included)
        self.offset = 0  # bytes fed so far
        self._name = re.compile(rb'"' + re.escape(key.encode()) + rb'"\s*:\s*$')

    def feed(self, block: bytes) -> list[bytes | int]:
        buffer = np.frombuffer(block, dtype=np.uint8)
        quotes = unescaped_quotes(buffer, self.backslashes)
        self.backslashes = _trailing_run(block, self.backslashes)
        marks = np.flatnonzero(_STRUCTURE[buffer])
        if marks.size:
            # a mark with an odd number of quotes before it (counting an open string) is text
            marks = marks[(np.searchsorted(quotes, marks) + self.in_string) % 2 == 0]
        if quotes.size % 2:
            self.in_string = not self.in_string
        kinds = buffer[marks]
        step = np.where(np.isin(kinds, _OPEN), 1, np.where(np.isin(kinds, _CLOSE), -1, 0))
        depth = self.depth + np.cumsum(step)
        if depth.size:
            self.depth = int(depth[-1])
        out: list[bytes | int] = []
        at, first = 0, 0  # the next byte of `block` to place; the next mark to look at
        if self.phase == "before":
            at, first = self._find_array(block, marks, kinds, depth)
        if self.phase == "inside":
            at, first = self._entries(block, marks[first:], kinds[first:], depth[first:], at, out)
        if self.phase == "after" or self.phase == "before":
            self._keep(block[at:])
        self.offset += len(block)
        return out

    def finish(self) -> bool:
        """Whether the text ended whole: the array read to its end, every string and bracket
        closed (what follows the array is left to the decode of `rest`)."""
        return self.phase == "after" and not self.in_string and self.depth == 0

    def _keep(self, text: bytes) -> None:
        self.rest += text
        if len(self.rest) > self.max_rest:
            raise TooLarge(f"the text outside the {self.key} array passes {self.max_rest} bytes")

    def _find_array(
        self, block: bytes, marks: np.ndarray, kinds: np.ndarray, depth: np.ndarray
    ) -> tuple[int, int]:
        """Look for the array's opening bracket; (the next byte, the next mark) after it."""
        if not self.level and marks.size:
            self.level = 1 if kinds[0] == _OPEN[0] else 2  # the text is an array, or an object
        if not self.level:
            return 0, 0
        for i in np.flatnonzero((kinds == _OPEN[0]) & (depth == self.level)):
            at = int(marks[i])
            if self.level == 2:  # a member of the object: the key must be ours
                need = len(self.key) + 320
                before = block[max(0, at - need) : at]
                if len(before) < need and self.rest:
                    before = bytes(self.rest[-(need - len(before)) :]) + before
                if not self._name.search(before):
                    continue
            self._keep(block[: at + 1])
            self.phase = "inside"
            return at + 1, int(i) + 1
        return 0, marks.size

    def _entries(
        self,
        block: bytes,
        marks: np.ndarray,
        kinds: np.ndarray,
        depth: np.ndarray,
        at: int,
        out: list[bytes | int],
    ) -> tuple[int, int]:
        """The entries this block ends; (the next byte, the next mark) after the array."""
        level = self.level
        close = np.flatnonzero((kinds == _CLOSE[0]) & (depth == level - 1))
        end = int(close[0]) if close.size else marks.size
        if np.any(depth[:end] < level):
            raise BrokenStructure(
                f"a bracket closes what no bracket opened inside the {self.key} array"
                f" (byte {self.offset + int(marks[np.flatnonzero(depth[:end] < level)[0]])})"
            )
        commas = marks[:end][(kinds[:end] == _COMMA) & (depth[:end] == level)]
        for comma in commas.tolist():
            out.append(self._entry(block[at:comma]))
            at = comma + 1
        if not close.size:
            self._hold(block[at:])
            return len(block), marks.size
        stop = int(marks[end])
        last = self._entry(block[at:stop])
        if last != b"" or self.entries > 1:
            out.append(last)
        elif self.entries == 1:
            self.entries = 0  # `[]`: no entry at all
        self.phase = "after"
        return stop, end + 1

    def _hold(self, piece: bytes) -> None:
        """Part of an entry that goes on in the next block (an entry past max_entry is counted,
        not held)."""
        self.pending_size += len(piece)
        if self.pending_size <= self.max_entry:
            self.pending.append(piece)
        else:
            self.pending.clear()

    def _entry(self, piece: bytes) -> bytes | int:
        self.entries += 1
        size = self.pending_size + len(piece)
        if size > self.max_entry:
            self.pending.clear()
            self.pending_size = 0
            return size
        if self.pending:
            piece = b"".join([*self.pending, piece])
            self.pending.clear()
            self.pending_size = 0
        return piece.strip()


def _trailing_run(block: bytes, before: int) -> int:
    """The run of backslashes that ends `block` (`before`: the run that ended the block before,
    which it continues when the block is all backslashes); trailing_backslashes' answer without
    an index array of the block's size."""
    run = len(block) - len(block.rstrip(b"\\"))
    return before + run if run == len(block) else run


def fed_entries(handle: BinaryIO, stream: ArrayStream, block: int = BLOCK) -> Iterator[bytes | int]:
    """The entries `stream` finds in the text read from `handle` `block` bytes at a time (a
    byte order mark at its start dropped): the reading loop of every streamed JSON read."""
    first = True
    while data := handle.read(block):
        if first:
            data, first = data.removeprefix(BOM), False
        yield from stream.feed(data)
