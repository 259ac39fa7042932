"""How people write run facts: token counts ('64K') and configuration labels.

Light on purpose (no numpy, no DuckDB): the command line's help and its tables use it, and so do
the Dagster tables, from one definition."""

from __future__ import annotations

import math
from collections.abc import Mapping

UNTAGGED = "(untagged)"
"""The label of runs without a model fact (no profiler_metadata.json `model`, no --tag model=)."""


def tokens(value: int | None) -> str:
    """A token count as people write it: 65536 -> '64K', 1000 -> '1000', None -> '-'."""
    if value is None:
        return "-"
    return f"{value // 1024}K" if value % 1024 == 0 and value >= 1024 else str(value)


def config_label(config: Mapping[str, object]) -> str:
    """'deepseek-v3.1 cpp 64K/16K pp2': model, schedule, seq_len/chunk_size and pp as far as they
    are known; unknown facts are left out and a configuration without a model reads
    '(untagged)', so runs that lack their facts are never labelled 'None'."""
    parts = [str(config.get("model") or UNTAGGED)]
    if config.get("schedule"):
        parts.append(str(config["schedule"]))
    seq_len, chunk = config.get("seq_len"), config.get("chunk_size")
    if seq_len is not None or chunk is not None:
        parts.append(f"{tokens(seq_len)}/{tokens(chunk)}")
    if config.get("pp") is not None:
        parts.append(f"pp{config['pp']}")
    return " ".join(parts)


def is_untagged(config: Mapping[str, object]) -> bool:
    """Whether a configuration lacks the model fact (its runs may mix workloads; int_chunk_tau
    names such a run's curve '(untagged) <run_id>')."""
    model = config.get("model")
    return not model or str(model).startswith(UNTAGGED)


def json_value(x: object) -> object:
    """A float as JSON can hold it: NaN -> None, inf -> 'inf' / '-inf' (JSON has neither)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x
