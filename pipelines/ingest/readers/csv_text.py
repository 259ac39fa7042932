"""Shared reading of the profiler's CSV files: every cell as text, columns found by header name.

torch_npu writes time cells as `<value>\\t` (a trailing TAB against Excel), sometimes inside quotes,
missing values as `N/A` or empty; older files have CRLF line ends. Cells are trimmed in SQL.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from pipelines import memory_budget
from pipelines.ingest.errors import QuarantineError
from pipelines.store.duck import sql_string

# A number Excel rewrote in scientific notation (e.g. 1.69512E+15): its precision is gone.
EXCEL_MANGLED = r"^[+-]?[0-9]+(\.[0-9]+)?[eE][+-]?[0-9]+$"
NUMBER = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$"
MISSING = ("", "N/A", "NA", "None", "null")


# A file up to this size is parsed once into an in-memory Arrow table (about its own size) that
# the reader's queries scan; a larger one stays a view over read_csv, parsed again by each query,
# so memory stays bounded. Parsing (and sniffing) a small file three times was a third of its
# read (12 KB kernel_details.csv: 60 -> 32 ms with the missing-value pattern below;
# docs/bench_ingest.md "Many small runs").
PARSE_ONCE_BYTES = 32 << 20

# The longest line a CSV reader parses (DuckDB's `max_line_size`; its default is 2 MB). A longer
# line (a 200 MiB `Input Shapes` cell) is one row too large to hold: it is set aside by its line
# number (`too_large`) and the rest of the file loads; the real kernel_details.csv lines are
# under 1 KB (msinsight level1: 66 KB for 191 rows).
MAX_LINE_BYTES = 8 << 20


# In a line longer than MAX_LINE_BYTES, a cell longer than this in a column the reader does not
# use (kernel_details' `Input Shapes`) is left empty and the row kept: nothing reads the value,
# and its row's times are good. A long cell of a used column still costs its row.
MAX_UNUSED_CELL_BYTES = 1 << 20


@dataclass
class LongLines:
    """Lines of one CSV set aside because they are longer than MAX_LINE_BYTES, and the cells of
    unused columns left empty so that their row fits."""

    lines: list[tuple[int, int]] = field(default_factory=list)  # (line number, bytes)
    blanked: list[tuple[int, str, int]] = field(default_factory=list)  # (line, column, bytes)
    # the last line, when the file ends inside it: (line number, its cells, the header's)
    cut: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def left_out(self) -> int:
        """Lines set aside: too long, or cut off."""
        return len(self.lines) + len(self.cut)

    def source_line(self, data_row: int) -> int:
        """The file's line number (1-based, header = line 1) of data row `data_row` (0-based)
        of what was read, counting the lines set aside before it."""
        line = data_row + 2
        for skipped, _ in self.lines:
            if skipped <= line:
                line += 1
        return line

    def reasons(self) -> list[str]:
        """`line N: too_large (...)` / `line N: cut_off (...)` for each line set aside."""
        return [
            f"line {n}: too_large (a line of {_size(size)}, over the"
            f" {_size(MAX_LINE_BYTES)} a CSV line may hold)"
            for n, size in self.lines
        ] + [
            f"line {n}: cut_off (the file ends inside it: "
            + ("inside a quoted cell" if cells < 0 else f"{cells} of the header's {header} cells")
            + ")"
            for n, cells, header in self.cut
        ]

    def repairs(self) -> list[str]:
        """`line N: its 'column' cell of X MiB left empty (...)` for each cell blanked."""
        return [
            f"line {n}: its {column!r} cell of {_size(size)} left empty (a column no"
            " reader uses; the row loaded)"
            for n, column, size in self.blanked
        ]


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 1 << 20 else f"{n / 2**10:.1f} KiB"


def open_csv(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    view: str,
    long_lines: LongLines | None = None,
    used: tuple[str, ...] | None = None,
) -> list[str]:
    """Register `path` as view `view` (all VARCHAR); returns the header names. Raises
    QuarantineError for empty, binary or unparsable files. With `long_lines`, a data line longer
    than MAX_LINE_BYTES is left out and recorded there (the rest loads); without, such a file is
    quarantined as `too_large`. With `used` (the header names the reader reads, any case), a
    long line's cells over MAX_UNUSED_CELL_BYTES in the other columns are left empty instead
    and the row kept (recorded in `long_lines.blanked`)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise QuarantineError("unreadable", str(exc)) from exc
    if not head.strip():
        raise QuarantineError("empty_file", f"{path.name} has no content")
    if _binary(head):
        raise QuarantineError("not_csv", f"{path.name} is binary (NUL bytes)")
    cut = _cut_last_line(path, head, size) if long_lines is not None else None
    read = path
    if cut is not None:  # the file ends inside a short last line: read a copy without it
        read = memory_budget.new_spill_dir() / path.name
        with path.open("rb") as source, read.open("wb") as target:
            shutil.copyfileobj(_Limited(source, cut[0]), target)
    try:
        try:
            columns = _parse(con, read, view, size)
        except _LineTooLong:
            columns = _parse_without_long_lines(con, read, view, size, long_lines, used)
        except duckdb.Error as exc:
            if "Invalid unicode" not in str(exc):
                raise
            # a byte that is not UTF-8 (a name cell written in another code page): read a copy
            # with such bytes as \xNN text, so the row keeps its times instead of the file failing
            copy = _one_line_ending(read, errors="backslashreplace")
            columns = _register(con, view, _read_csv(con, copy), size)
        if cut is not None and long_lines is not None:
            rows = con.sql(f"select count(*) from {view}").fetchone()[0]
            long_lines.cut.append((long_lines.source_line(rows), cut[1], cut[2]))
    except duckdb.Error as exc:
        raise QuarantineError("csv_parse_error", str(exc).splitlines()[0][:300]) from exc
    return [c.strip() for c in columns]


def _binary(head: bytes) -> bool:
    """Whether a file is binary by its first bytes: a NUL in its header line, or NULs past 1 %
    of them. One NUL inside a cell (a kernel name) is text DuckDB reads as it is; the whole file
    was `not_csv` for it before (issue 36 round four: 191 kernels lost to one NUL)."""
    if b"\x00" not in head:
        return False
    first = re.split(rb"[\r\n]", head, maxsplit=1)[0]
    return b"\x00" in first or head.count(b"\x00") * 100 > len(head)


_TAIL_BYTES = 1 << 16


def _cut_last_line(path: Path, head: bytes, size: int) -> tuple[int, int, int] | None:
    """(the offset where it starts, its cells or -1 inside quotes, the header's cells) of the
    last line when the file ends inside it: no line break at the end and fewer cells than the
    header, or an open quote (issue 36 round four: a kernel_details.csv cut inside its last
    line's Duration cell stored that kernel with the digits before the cut; DuckDB pads the
    missing cells with NULL). None for a whole file, or a last line longer than 64 KiB."""
    with path.open("rb") as handle:
        handle.seek(max(0, size - _TAIL_BYTES))
        tail = handle.read()
    if not tail or tail.endswith((b"\n", b"\r")):
        return None
    start = max(tail.rfind(b"\n"), tail.rfind(b"\r")) + 1
    if start == 0:
        return None  # one line (the header alone) or a last line too long to look at
    line = tail[start:].decode("utf-8", errors="replace")
    header = len(_header_names(re.split(rb"[\r\n]", head, maxsplit=1)[0]))
    cells = -1 if line.count('"') % 2 else len(next(csv.reader([line])))
    if cells >= header:
        return None
    return size - len(tail) + start, cells, header


class _Limited(io.RawIOBase):
    """The first `limit` bytes of a binary file, as a readable stream."""

    def __init__(self, source: io.BufferedReader, limit: int) -> None:
        self.source, self.left = source, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        data = self.source.read(min(len(buffer), self.left))
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)


class _LineTooLong(Exception):
    """DuckDB met a line longer than MAX_LINE_BYTES (its message, which quotes the whole line,
    is not kept: it would hold the line in memory twice more)."""


def _has_long_line(path: Path) -> bool:
    """Whether some line of `path` is longer than MAX_LINE_BYTES, found from the line breaks of
    each MAX_LINE_BYTES block (memchr speed; a line inside one block cannot be longer). Checked
    before DuckDB sees the file: its sniffer would buffer the whole line (a 200 MiB line took a
    file read under a 512 MB budget to 670 MB RSS)."""
    since_break = 0  # bytes since the last line break
    with path.open("rb") as handle:
        while block := handle.read(MAX_LINE_BYTES):
            first = block.find(b"\n")
            if first < 0:
                since_break += len(block)
            else:
                if since_break + first > MAX_LINE_BYTES:
                    return True
                since_break = len(block) - 1 - block.rfind(b"\n")
            if since_break > MAX_LINE_BYTES:
                return True
    return False


def _parse(con: duckdb.DuckDBPyConnection, path: Path, view: str, size: int) -> list[str]:
    if size > MAX_LINE_BYTES and _has_long_line(path):
        raise _LineTooLong
    try:
        relation = _read_csv(con, path)
    except duckdb.Error as exc:
        message = str(exc)
        if "Maximum line size" in message:
            del message
            raise _LineTooLong from None
        if "sniffing" not in message:
            raise
        # mixed line endings (one LF in a CRLF file) defeat DuckDB's dialect sniffer: read a
        # copy whose every line ends in LF, the rows unchanged
        relation = _read_csv(con, _one_line_ending(path))
    return _register(con, view, relation, size)


def _parse_without_long_lines(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    view: str,
    size: int,
    long_lines: LongLines | None,
    used: tuple[str, ...] | None = None,
) -> list[str]:
    """Read a copy of `path` without its lines longer than MAX_LINE_BYTES, streamed (memory
    bounded by the limit): a long line's over-long cells of unused columns are emptied (when
    `used` is given) and the line kept if it then fits; otherwise it is left out. Raises
    QuarantineError(too_large) when the header is one of them or the caller cannot take rows
    set aside."""
    found = LongLines()
    copy = memory_budget.new_spill_dir() / path.name
    with path.open("rb") as source, copy.open("wb") as target:
        number = 0  # records (lines, but a quoted line break does not end one)
        header: list[str] | None = None
        pending: list[bytes] = []  # the pieces of the record being read
        held, quote_open = 0, False  # bytes in `pending`; inside quotes at its end
        while piece := source.readline(MAX_LINE_BYTES + 1):
            pending.append(piece)
            held += len(piece)
            quote_open ^= bool(piece.count(b'"') & 1)
            if held <= MAX_LINE_BYTES + 1:  # its line break not counted
                if quote_open or not piece.endswith(b"\n"):
                    continue  # a quoted line break: the record goes on
                number += 1
                if header is None:
                    header = _header_names(b"".join(pending))
                target.writelines(pending)
                pending, held = [], 0
                continue
            number += 1
            named = header or []
            keep = (
                {i for i, name in enumerate(named) if name.lower() in used}
                if used is not None and long_lines is not None
                else set(range(len(named)))
            )
            record = _LongRecord(number, named, keep)
            for part in pending:
                record.feed(part)
            while not record.done and (piece := source.readline(1 << 20)):
                record.feed(piece)
            if record.fits():
                target.write(bytes(record.out))
                found.blanked.extend(record.blanked)
            else:
                found.lines.append((number, record.length))
            pending, held, quote_open = [], 0, False
        target.writelines(pending)  # a last record the file ends inside (no line break)
    if not found.lines and not found.blanked:
        raise QuarantineError("csv_parse_error", f"{path.name}: a line DuckDB could not size")
    if (found.lines and found.lines[0][0] == 1) or long_lines is None:
        raise QuarantineError("too_large", f"{path.name}: {'; '.join(found.reasons()[:3])}")
    long_lines.lines.extend(found.lines)
    long_lines.blanked.extend(found.blanked)
    return _register(con, view, _read_csv(con, copy), size)


def _header_names(line: bytes) -> list[str]:
    """The header cells of a CSV's first line, trimmed (a BOM dropped)."""
    text = line.decode("utf-8-sig", errors="replace")
    return [cell.strip() for cell in next(csv.reader(io.StringIO(text)), [])]


_DELIMITER = re.compile(rb'[,"\n]')


class _LongRecord:
    """One CSV record longer than MAX_LINE_BYTES, fed in pieces: its cells are found by a
    quote-aware scan (a `"` toggles quoting, so `""` inside quotes is a quote; a comma or line
    break inside quotes is text), each cell's raw bytes copied to `out` unless it is longer
    than MAX_UNUSED_CELL_BYTES in a column outside `keep`: then it is written as an empty cell
    and recorded in `blanked`. Memory: one cell up to the cell limit and `out` up to the line
    limit, whatever the record's length."""

    def __init__(self, line: int, header: list[str], keep: set[int]) -> None:
        self.line, self.header, self.keep = line, header, keep
        self.out = bytearray()
        self.cell = bytearray()
        self.cell_bytes = 0
        self.ends_in_cr = False
        self.column = 0
        self.quoted = False
        self.done = False
        self.length = 0  # bytes of the record in the file
        self.too_large = False
        self.blanked: list[tuple[int, str, int]] = []

    def feed(self, piece: bytes) -> None:
        self.length += len(piece)
        at = 0
        while at < len(piece) and not self.done:
            if self.quoted:
                end = piece.find(b'"', at)
                stop = len(piece) if end < 0 else end + 1
                self._take(piece[at:stop])
                self.quoted = end < 0
                at = stop
                continue
            match = _DELIMITER.search(piece, at)
            if match is None:
                self._take(piece[at:])
                break
            end = match.start()
            mark = piece[end : end + 1]
            if mark == b'"':
                self._take(piece[at : end + 1])
                self.quoted = True
            elif mark == b",":
                self._take(piece[at:end])
                self._end_cell(b",")
            else:
                self._take(piece[at:end])
                self._end_cell(b"\n")
                self.done = True
            at = end + 1

    def _take(self, data: bytes) -> None:
        self.cell_bytes += len(data)
        self.ends_in_cr = data.endswith(b"\r") if data else self.ends_in_cr
        if self.cell_bytes <= MAX_UNUSED_CELL_BYTES:
            self.cell += data

    def _end_cell(self, separator: bytes) -> None:
        if self.cell_bytes > MAX_UNUSED_CELL_BYTES:
            name = self.header[self.column] if self.column < len(self.header) else ""
            if self.column in self.keep or self.column >= len(self.header):
                self.too_large = True
            else:
                # a CRLF line's last cell keeps its CR
                self.cell = bytearray(b"\r" if separator == b"\n" and self.ends_in_cr else b"")
                self.blanked.append((self.line, name, self.cell_bytes))
        if len(self.out) + len(self.cell) + 1 > MAX_LINE_BYTES:
            self.too_large = True
        if not self.too_large:
            self.out += self.cell
            self.out += separator
        self.cell = bytearray()
        self.cell_bytes = 0
        self.ends_in_cr = False
        self.column += 1

    def fits(self) -> bool:
        """Whether the record, its over-long unused cells emptied, is whole and within the
        line limit (a record the file ends inside is ended there)."""
        if not self.done and not self.quoted:
            self._end_cell(b"\n")
            self.done = True
        return self.done and not self.quoted and not self.too_large


def _register(
    con: duckdb.DuckDBPyConnection, view: str, relation: duckdb.DuckDBPyRelation, size: int
) -> list[str]:
    columns = list(relation.columns)
    if size <= PARSE_ONCE_BYTES:
        con.register(view, relation.to_arrow_table())  # parsed (and checked) here, once
    else:
        con.register(view, relation)
        con.sql(f"select count(*) from {view}").fetchone()  # force a full parse now
    return columns


def _read_csv(con: duckdb.DuckDBPyConnection, path: Path) -> duckdb.DuckDBPyRelation:
    return con.sql(
        f"select * from read_csv({sql_string(path)}, all_varchar = true, header = true,"
        " delim = ',', quote = '\"', escape = '\"', null_padding = true,"
        f" max_line_size = {MAX_LINE_BYTES})"
    )


def _one_line_ending(path: Path, errors: str = "surrogateescape") -> Path:
    """A copy of `path` in a spill folder with every line ending (CRLF, CR, LF) as LF, written
    line by line (bounded memory); bytes that are not UTF-8 are kept as they were, or with
    errors="backslashreplace" written as `\\xNN` text."""
    copy = memory_budget.new_spill_dir() / path.name
    with (
        path.open(encoding="utf-8", errors=errors, newline=None) as source,
        copy.open("w", encoding="utf-8", errors="surrogateescape", newline="\n") as target,
    ):
        for line in source:
            target.write(line)
    return copy


def quoted(column: str) -> str:
    """A SQL identifier for a header name such as `Start Time(us)`."""
    return '"' + column.replace('"', '""') + '"'


# One full-match pattern for the missing-value spellings: DuckDB plans `cell in ('', 'N/A', ...)`
# as a chain of comparisons, ~1 ms a query per use, which made the per-file fixed cost of a small
# CSV (docs/bench_ingest.md "Many small runs"); the pattern is one compiled regex.
_MISSING_PATTERN = "|".join(MISSING)


def trimmed(column: str) -> str:
    """SQL for a trimmed cell, NULL when it is one of the missing-value spellings."""
    cell = f"trim({quoted(column)}, ' \t\r\n\"')"
    return f"case when regexp_full_match({cell}, '{_MISSING_PATTERN}') then null else {cell} end"


def check_time_columns(
    con: duckdb.DuckDBPyConnection,
    view: str,
    name: str,
    numbers: list[str],
    excel_only: tuple[str, ...] | list[str] = (),
    unparsable_quarantines: bool = True,
) -> None:
    """Quarantine-worthy problems of time columns, found in one scan of the file: Excel damage
    in any of them, and in `numbers` cells that are not numbers (an empty or N/A cell is not
    one: the reader drops that row as missing). The first problem, in column order and Excel
    damage before the rest, raises QuarantineError.

    Excel damage is a column at least half of whose cells are in scientific notation: Excel
    shows every number wider than 11 digits that way (General format), so in a sheet it saved
    every µs start time (16 digits) is rewritten and no time in it can be trusted to the
    nanosecond. One such cell among plain numbers (`1e300` in one row) is a bad value of its
    row, left to the reader to set aside."""
    aggregates = []
    for i, column in enumerate([*numbers, *excel_only]):
        cell = trimmed(column)
        mangled = f"regexp_matches({cell}, '{EXCEL_MANGLED}')"
        aggregates += [
            f"count({cell}) as filled_{i}",
            f"count(*) filter (where {mangled}) as mangled_{i}",
            f"any_value({cell}) filter (where {mangled}) as mangled_example_{i}",
        ]
        if column in numbers:
            unparsable = f"{cell} is not null and not regexp_matches({cell}, '{NUMBER}')"
            aggregates += [
                f"count(*) filter (where {unparsable}) as unparsable_{i}",
                f"any_value({quoted(column)}) filter (where {unparsable}) as unparsable_eg_{i}",
            ]
    found = con.sql(f"select {', '.join(aggregates)} from {view}").pl().row(0, named=True)
    for i, column in enumerate([*numbers, *excel_only]):
        if found[f"mangled_{i}"] and 2 * found[f"mangled_{i}"] >= found[f"filled_{i}"]:
            raise QuarantineError(
                "excel_mangled_number",
                f"{name}: {found[f'mangled_{i}']} of {found[f'filled_{i}']} '{column}' cells in"
                f" scientific notation such as {found[f'mangled_example_{i}']!r} (precision lost,"
                " likely saved by Excel)",
            )
        if unparsable_quarantines and found.get(f"unparsable_{i}"):
            raise QuarantineError(
                "unparsable_rows",
                f"{name}: {found[f'unparsable_{i}']} rows whose '{column}' is not a number"
                f" (e.g. {found[f'unparsable_eg_{i}']!r})",
            )


def pick(columns: list[str], *candidates: str) -> str | None:
    """The first header present among `candidates` (exact, then case-insensitive)."""
    for candidate in candidates:
        if candidate in columns:
            return candidate
    lowered = {c.lower(): c for c in columns}
    for candidate in candidates:
        if candidate.lower() in lowered:
            return lowered[candidate.lower()]
    return None


def require(columns: list[str], where: str, **wanted: tuple[str, ...]) -> dict[str, str]:
    """Map logical names to headers; QuarantineError(missing_columns) if any is absent."""
    found = {key: pick(columns, *options) for key, options in wanted.items()}
    missing = [options[0] for key, options in wanted.items() if found[key] is None]
    if missing:
        raise QuarantineError(
            "missing_columns", f"{where} lacks {', '.join(missing)} (header: {columns[:12]})"
        )
    return {k: v for k, v in found.items() if v is not None}


def as_int_sql(column: str | None) -> str:
    """SQL for an optional integer column (NULL when absent or not an integer: `3.5` is NULL,
    never rounded; `3.0` is 3)."""
    if column is None:
        return "null::integer"
    cell = trimmed(column)
    return (
        f"case when regexp_full_match({cell}, '[+-]?[0-9]+([.]0*)?')"
        f" then try_cast(split_part({cell}, '.', 1) as integer) end"
    )
