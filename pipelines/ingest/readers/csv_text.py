"""Shared reading of the profiler's CSV files: every cell as text, columns found by header name.

torch_npu writes time cells as `<value>\\t` (a trailing TAB against Excel), sometimes inside quotes,
missing values as `N/A` or empty; older files have CRLF line ends. Cells are trimmed in SQL.
"""

from __future__ import annotations

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


def open_csv(con: duckdb.DuckDBPyConnection, path: Path, view: str) -> list[str]:
    """Register `path` as view `view` (all VARCHAR); returns the header names. Raises
    QuarantineError for empty, binary or unparsable files."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise QuarantineError("unreadable", str(exc)) from exc
    if not head.strip():
        raise QuarantineError("empty_file", f"{path.name} has no content")
    if b"\x00" in head:
        raise QuarantineError("not_csv", f"{path.name} is binary (NUL bytes)")
    try:
        try:
            columns = _parse(con, path, view, size)
        except duckdb.Error as exc:
            if "Invalid unicode" not in str(exc):
                raise
            # a byte that is not UTF-8 (a name cell written in another code page): read a copy
            # with such bytes as \xNN text, so the row keeps its times instead of the file failing
            copy = _one_line_ending(path, errors="backslashreplace")
            columns = _register(con, view, _read_csv(con, copy), size)
    except duckdb.Error as exc:
        raise QuarantineError("csv_parse_error", str(exc).splitlines()[0][:300]) from exc
    return [c.strip() for c in columns]


def _parse(con: duckdb.DuckDBPyConnection, path: Path, view: str, size: int) -> list[str]:
    try:
        relation = _read_csv(con, path)
    except duckdb.Error as exc:
        if "sniffing" not in str(exc):
            raise
        # mixed line endings (one LF in a CRLF file) defeat DuckDB's dialect sniffer: read a
        # copy whose every line ends in LF, the rows unchanged
        relation = _read_csv(con, _one_line_ending(path))
    return _register(con, view, relation, size)


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
        " delim = ',', quote = '\"', escape = '\"', null_padding = true)"
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
    in any of them (Excel rewrote every long number of the sheet, so no time in it can be
    trusted to the nanosecond), and in `numbers` cells that are not numbers (an empty or N/A
    cell is not one: the reader drops that row as missing). The first problem, in column order
    and Excel damage before the rest, raises QuarantineError."""
    aggregates = []
    for i, column in enumerate([*numbers, *excel_only]):
        cell = trimmed(column)
        mangled = f"regexp_matches({cell}, '{EXCEL_MANGLED}')"
        aggregates += [
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
        if found[f"mangled_{i}"]:
            raise QuarantineError(
                "excel_mangled_number",
                f"{name}: {found[f'mangled_{i}']} '{column}' cells in scientific notation such as"
                f" {found[f'mangled_example_{i}']!r} (precision lost, likely saved by Excel)",
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
