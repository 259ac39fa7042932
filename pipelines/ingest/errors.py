"""The one exception readers raise for an input they cannot ingest; the spine turns it into a
quarantine row (reason code + one-line detail) and carries on with the other inputs."""

from __future__ import annotations

from pathlib import Path

from pipelines.ingest.frames import Quarantined

# Reason codes used by the readers (short, stable, lower_snake; the quarantine table stores them).
EMPTY_FILE = "empty_file"
CORRUPT_DB = "corrupt_db"
MISSING_TABLES = "missing_tables"
MISSING_COLUMNS = "missing_columns"
MISSING_FILE = "missing_file"
NOT_GZIP = "not_gzip"
BAD_JSON = "bad_json"
TRUNCATED_JSON = "truncated_json"
NO_TRACE_EVENTS = "no_trace_events"
NO_RANKS = "no_ranks"


class UnreadableInput(Exception):
    """An input file or folder that cannot be ingested.

    `reason` is a short code (see the constants above), `detail` a one-line human explanation,
    `path` the offending file when known."""

    def __init__(self, reason: str, detail: str, path: str | Path | None = None) -> None:
        self.reason = reason
        self.detail = detail
        self.path = None if path is None else str(path)
        where = f"{self.path}: " if self.path else ""
        super().__init__(f"{where}{reason}: {detail}")

    def to_quarantined(self, path: str | Path | None = None) -> Quarantined:
        """The quarantine record for this error (`path` overrides the one given at raise time)."""
        where = str(path) if path is not None else (self.path or "")
        return Quarantined(path=where, reason=self.reason, detail=self.detail)
