"""The one exception readers raise for an input they must set aside; the spine turns it into a
quarantine row (reason code + one-line detail) and carries on with the other inputs."""

from __future__ import annotations

from pathlib import Path

from pipelines.ingest.frames import Quarantined


class QuarantineError(Exception):
    """An input file that cannot be ingested: a short reason code and a one-line detail."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail

    def quarantined(self, path: Path | str) -> Quarantined:
        """The quarantine record of `path` for this error."""
        return Quarantined(path=str(path), reason=self.reason, detail=self.detail)
