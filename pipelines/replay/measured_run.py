"""The measured run a replay starts from: its runs row and its chunks (canonical schemas)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl


@dataclass
class Measured:
    """The measured run: its runs row and its chunks."""

    run: dict[str, Any]
    chunks: pl.DataFrame

    @property
    def run_id(self) -> str:
        return str(self.run["run_id"])

    def makespan_ns(self) -> int:
        """First chunk start to last chunk end, over every rank."""
        return int(self.chunks["end_ns"].max()) - int(self.chunks["start_ns"].min())

    def ttft_mean_ns(self) -> float:
        """Mean over requests of last chunk end − first chunk start (the arrival time replay
        assumes: the request's first chunk start)."""
        per_request = self.chunks.group_by("request_id").agg(
            (pl.col("end_ns").max() - pl.col("start_ns").min()).alias("ttft")
        )
        return float(per_request["ttft"].mean())
