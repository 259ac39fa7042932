"""A stop asked for in this process (Ctrl-C, SIGTERM): set by the CLI's signal handler
(pipelines/cli/__init__.py), read by the guards that turn one input's error into a quarantine
row. DuckDB turns a stop that lands in a query into `RuntimeError: Query interrupted`, which such
a guard stored as the file's `read_error` while the ingest went on (issue 36 round seven: the
re-run then found the run `unchanged`, its cluster data missing for good)."""

from __future__ import annotations

_requested: list[str] = []


def request(what: str) -> None:
    """Record a stop ("Ctrl-C", "SIGTERM")."""
    _requested.append(what)


def requested() -> str | None:
    """The first stop recorded in this call, or None."""
    return _requested[0] if _requested else None


def clear() -> None:
    """Forget the stops of an earlier call (a new CLI call in the same process)."""
    _requested.clear()


def raise_if_requested() -> None:
    """Raise KeyboardInterrupt when a stop was recorded: for a guard about to file an error."""
    if _requested:
        raise KeyboardInterrupt
