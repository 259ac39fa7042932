"""String literals of a JSON file longer than a limit: found in one bounded-memory pass and
left out of a copy of the file, so one huge value costs its own entry, not the file.

A JSON string runs from an unescaped `"` to the next one (RFC 8259 §7: inside a string a quote
is written `\\"`, and a backslash only starts an escape there); outside strings valid JSON holds
no backslash. So the unescaped quotes of a file, taken in order, pair up into its string
literals, and a literal longer than the limit is a stretch between two of them. The pass reads
1 MiB at a time and finds the quotes with numpy (`BLOCK` bytes of memory, ~1 GB/s); a quote after
an odd run of backslashes is an escaped one (the run may start in the previous block).

`without_long_strings` copies the file with each such literal replaced by `LEFT_OUT` (a short
JSON string), keeping every other byte, so entries keep their order and index. Where the text
holds no valid JSON the pairing is meaningless, and the copy is refused by the JSON reader as
the original would have been."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

BLOCK = 1 << 20
QUOTE = ord('"')
BACKSLASH = ord("\\")
LEFT_OUT = "<left out by tracereplay: a string past the size one value may take>"
"""What a long string literal reads in the copy: no quote of any kind, no backslash (so it is
the same text as a JSON string and as a SQL literal)."""
_KEY_BEFORE = re.compile(rb'"((?:[^"\\]|\\.){0,200})"\s*:\s*$')


@dataclass(frozen=True)
class LongString:
    """One string literal: byte offsets of its opening and closing quote, and the key it is the
    value of (None when it is an array item or a key itself)."""

    start: int
    end: int
    key: str | None

    @property
    def size(self) -> int:
        return self.end - self.start - 1


def unescaped_quotes(block: np.ndarray, backslashes_before: int) -> np.ndarray:
    """Offsets of the unescaped quotes in `block` (`backslashes_before`: the run of backslashes
    that ended the previous block)."""
    quotes = np.flatnonzero(block == QUOTE)
    if quotes.size == 0:
        return quotes
    escaped = np.zeros(quotes.size, dtype=bool)
    after_backslash = np.flatnonzero(
        np.where(quotes > 0, block[np.maximum(quotes - 1, 0)] == BACKSLASH, backslashes_before > 0)
    )
    for i in after_backslash:  # rare: count the run of backslashes before this quote
        at, run = int(quotes[i]) - 1, 0
        while at >= 0 and block[at] == BACKSLASH:
            run, at = run + 1, at - 1
        if at < 0:
            run += backslashes_before
        escaped[i] = run % 2 == 1
    return quotes[~escaped]


def trailing_backslashes(block: np.ndarray, before: int) -> int:
    not_backslash = np.flatnonzero(block != BACKSLASH)
    if not_backslash.size == 0:
        return before + block.size
    return block.size - 1 - int(not_backslash[-1])


def long_strings(path: Path, limit: int) -> list[LongString]:
    """The string literals of `path` longer than `limit` bytes, in file order."""
    found: list[tuple[int, int]] = []
    opened: int | None = None  # the offset of the quote that opened the string we are in
    backslashes = 0
    offset = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(BLOCK):
            block = np.frombuffer(chunk, dtype=np.uint8)
            quotes = unescaped_quotes(block, backslashes) + offset
            backslashes = trailing_backslashes(block, backslashes)
            offset += len(chunk)
            if quotes.size == 0:
                continue
            if opened is not None:  # the first quote closes the string open since before
                if quotes[0] - opened - 1 > limit:
                    found.append((opened, int(quotes[0])))
                quotes = quotes[1:]
                opened = None
            pairs = quotes.size // 2
            starts, ends = quotes[: 2 * pairs : 2], quotes[1 : 2 * pairs : 2]
            for i in np.flatnonzero(ends - starts - 1 > limit):
                found.append((int(starts[i]), int(ends[i])))
            if quotes.size % 2:
                opened = int(quotes[-1])
        if opened is not None and offset - opened - 1 > limit:  # never closed: to the end
            found.append((opened, offset))
    return [LongString(start, end, _key_before(path, start)) for start, end in found]


def _key_before(path: Path, start: int) -> str | None:
    with open(path, "rb") as handle:
        handle.seek(max(0, start - 256))
        head = handle.read(min(start, 256))
    match = _KEY_BEFORE.search(head)
    if not match:
        return None
    try:
        return json.loads(b'"' + match.group(1) + b'"')
    except ValueError:
        return match.group(1).decode("utf-8", "replace")


def without_long_strings(path: Path, strings: list[LongString], target: Path) -> None:
    """Copy `path` to `target` with each of `strings` replaced by the JSON string LEFT_OUT."""
    replacement = f'"{LEFT_OUT}"'.encode()
    with open(path, "rb") as source, open(target, "wb") as out:
        at = 0
        for item in strings:
            _copy_bytes(source, out, item.start - at)
            out.write(replacement)
            source.seek(item.end + 1)
            at = item.end + 1
        shutil.copyfileobj(source, out, BLOCK)


def _copy_bytes(source: BinaryIO, out: BinaryIO, size: int) -> None:
    """The next `size` bytes of `source` (fewer at its end) onto `out`, BLOCK at a time."""
    while size > 0 and (chunk := source.read(min(BLOCK, size))):
        out.write(chunk)
        size -= len(chunk)
