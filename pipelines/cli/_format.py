"""Terminal presentation shared by the subcommands: durations with units, tables that fit."""

from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from typing import Any

from pipelines.labels import tokens as tokens  # re-exported: the subcommands import it here

MAX_WIDTH = 120


def duration(ns: float | int | None, digits: int = 1) -> str:
    """ns -> '12.3 µs' / '291.7 ms' / '2.35 s' / '-' for missing."""
    if ns is None or (isinstance(ns, float) and not math.isfinite(ns)):
        return "-"
    value = float(ns)
    size = abs(value)
    if size >= 1e9:
        return f"{value / 1e9:.{digits + 1}f} s"
    if size >= 1e6:
        return f"{value / 1e6:.{digits}f} ms"
    if size >= 1e3:
        return f"{value / 1e3:.{digits}f} µs"
    return f"{value:.0f} ns"


def ellipsis(text: Any, width: int) -> str:
    """`text` cut to `width` characters with a trailing '…' when it was longer."""
    text = "" if text is None else str(text)
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def short_ids(ids: Sequence[str], hex_digits: int = 6) -> dict[str, str]:
    """Each `<stem>-<12 hex>` run id cut to the shortest prefix of at least `hex_digits` hex
    digits that no other id shares (like git's short hashes; `show` takes prefixes)."""
    out = {}
    for run_id in ids:
        stem, _, digest = run_id.rpartition("-")
        if not stem or len(digest) <= hex_digits:
            out[run_id] = run_id
            continue
        for n in range(hex_digits, len(digest) + 1):
            prefix = f"{stem}-{digest[:n]}"
            if sum(1 for other in ids if other.startswith(prefix)) == 1:
                break
        out[run_id] = prefix
    return out


def wrapped(text: str, indent: str = "") -> str:
    """`text` wrapped to the console width."""
    import textwrap

    return textwrap.fill(text, console_width(), subsequent_indent=indent)


def console_width() -> int:
    return min(MAX_WIDTH, shutil.get_terminal_size((MAX_WIDTH, 24)).columns)


def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    right: Sequence[int] = (),
    title: str | None = None,
) -> str:
    """A rich table rendered to text no wider than the terminal (at most 120 columns)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=title,
        box=None,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
        title_justify="left",
        header_style="bold",
    )
    for i, header in enumerate(headers):
        table.add_column(
            header,
            justify="right" if i in right else "left",
            overflow="fold",
            no_wrap=i == 0,  # the key column (a run id, a name) stays on one line
        )
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    console = Console(width=console_width(), color_system=None, force_terminal=False)
    with console.capture() as capture:
        console.print(table)
    return "\n".join(line.rstrip() for line in capture.get().rstrip().splitlines())
