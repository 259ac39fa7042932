"""Schedule and chunk-size advice: sweep chunk size x schedule on one cost model with the
simulator, recommend the fastest and say whether its margin over the runner-up would survive
measurement noise (docs/advise.md).

    advise(source, scenario, noise) -> Advice      the one door (CLI `tracereplay advise`)

A source is a simulator preset, a stored run's fitted cost, a fitted tau_k line or a latency
table (pipelines.analysis.advice.sources); the sweep runs pipelines.sim (no simulator of its
own)."""

from pipelines.analysis.advice.advisor import Advice, NoiseModel, Scenario, advise
from pipelines.analysis.advice.grid import parse_chunk_grid, remainder_note
from pipelines.analysis.advice.sources import (
    CostSource,
    curve_source,
    preset_source,
    run_source,
    table_source,
)

__all__ = [
    "Advice",
    "CostSource",
    "NoiseModel",
    "Scenario",
    "advise",
    "curve_source",
    "parse_chunk_grid",
    "preset_source",
    "remainder_note",
    "run_source",
    "table_source",
]
