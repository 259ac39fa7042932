"""Chunk-size grids: parsing `8K,16K,24K,32K` or `8K:32K:4K`, and what a chunk size leaves over.

A prompt of L tokens in chunks of c is ceil(L / c) chunks, the last one L - (N - 1) c tokens.
The VPP paper (Shi et al., 2026, arXiv 2608.26523, §7 and its design table) explains 24K's lead on
long prompts by that remainder: a shorter last chunk runs in the pipeline's drain, so the tail
bubble shrinks; 8K, 16K and 32K divide 64K-1M prompts evenly and leave none."""

from __future__ import annotations

import re

K = 1024
PAPER_GRID: tuple[int, ...] = (8 * K, 16 * K, 24 * K, 32 * K)
"""The chunk budgets the VPP paper sweeps for every schedule (§6.1: {8K, 16K, 24K, 32K})."""
FINE_GRID: tuple[int, ...] = tuple(c * K for c in range(8, 33, 4))
"""8K to 32K in 4K steps: the paper's budgets and the ones between them."""
MAX_GRID = 64
"""The most chunk sizes one sweep takes (a typo such as 1:1M:1 would run for hours)."""

MAX_TOKENS = 1 << 30
"""The largest token count taken (1024M): 10^20 tokens overflowed the simulator's int64 with a
traceback."""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_tokens(text: str) -> int:
    """`24K` -> 24576, `512k` -> 524288, `1M` -> 1048576, `3000` -> 3000 (K = 1024 tokens)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a token count (e.g. 24K, 512K, 1M or 3000)")
    value = float(match.group(1)) * {"": 1, "k": K, "m": K * K}[match.group(2).lower()]
    if value != int(value) or value < 1:
        raise ValueError(f"{text!r} is not a whole number of tokens >= 1")
    if value > MAX_TOKENS:
        raise ValueError(f"{text!r} is more than {MAX_TOKENS // (K * K)}M tokens")
    return int(value)


def parse_chunk_grid(text: str) -> tuple[int, ...]:
    """A comma-separated list of sizes and `lo:hi:step` ranges (inclusive), sorted, unique:
    `8K,16K,24K,32K`, `8K:32K:4K`, `paper` (PAPER_GRID) or `fine` (FINE_GRID)."""
    named = {"paper": PAPER_GRID, "fine": FINE_GRID}
    sizes: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part.lower() in named:
            sizes.update(named[part.lower()])
        elif ":" in part:
            fields = part.split(":")
            if len(fields) != 3:
                raise ValueError(f"{part!r}: a range is lo:hi:step, e.g. 8K:32K:4K")
            lo, hi, step = (parse_tokens(f) for f in fields)
            if hi < lo:
                raise ValueError(f"{part!r}: hi must be >= lo")
            if (hi - lo) // step + 1 > MAX_GRID:
                raise ValueError(f"{part!r}: more than {MAX_GRID} chunk sizes")
            sizes.update(range(lo, hi + 1, step))
        else:
            sizes.add(parse_tokens(part))
    if not sizes:
        raise ValueError("no chunk size given")
    if len(sizes) > MAX_GRID:
        raise ValueError(f"{len(sizes)} chunk sizes: at most {MAX_GRID}")
    return tuple(sorted(sizes))


def chunk_count(seq_len: int, chunk: int) -> tuple[int, int]:
    """(number of chunks, tokens of the last one) of a prompt of seq_len in chunks of chunk."""
    n = -(-seq_len // chunk)
    return n, seq_len - (n - 1) * chunk


def tokens_label(tokens: int) -> str:
    """24576 -> '24K', 3000 -> '3000', 1048576 -> '1M', 12800 -> '12.5K'."""
    if tokens % (K * K) == 0:
        return f"{tokens // (K * K)}M"
    if tokens % K == 0:
        return f"{tokens // K}K"
    if tokens > K and (tokens * 2) % K == 0:
        return f"{tokens / K:g}K"
    return str(tokens)


def remainder_note(seq_len: int, chunk: int) -> str:
    """'22 chunks, the last one 8K: a remainder that runs in the drain' or '16 equal chunks'."""
    n, last = chunk_count(seq_len, chunk)
    if last == chunk:
        return f"{n} equal chunks"
    return f"{n} chunks, the last one {tokens_label(last)}: a remainder that runs in the drain"
