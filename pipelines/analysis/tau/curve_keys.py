"""The columns that name a tau_k curve, importable without the statistics stack."""

from __future__ import annotations

CONFIG_KEYS = (
    *("source", "model", "schedule", "chunk_size", "seq_len", "tp", "pp", "vp", "hardware"),
    *("attention", "operator"),
)
"""A configuration: the run facts whose runs (repeats) are pooled into one fit
(pipelines.vocabulary.configuration.RUN_CONFIG_KEYS: the reader `source` and `hardware` included,
so runs of two readers or two accelerators are never one curve). `operator` names
the curve of an operator-latency table (attention, layer, ...: docs/latency_tables.md); NULL for
runs."""

CURVE_KEYS = (*CONFIG_KEYS, "vstage")
"""A curve = one configuration and one virtual stage; repeats of it (runs) are pooled. `attention`
(dense / sparse, a run fact) rides along: it decides which shape the curve is expected to have."""
