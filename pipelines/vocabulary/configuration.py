"""What makes runs one configuration: the run facts that must all be equal for runs to be pooled
as repeats (one tau_k fit, one nightly trend, one change-point history, one variance prior).

`source` (the reader that produced the run: ascend_pt, ascend_pt_db, kineto, cluster, ...) and
`hardware` are part of it: the same model measured through two readers, or on two accelerators,
is two configurations, never one curve or one trend (issue 35). A fact nobody knows is NULL and
matches only NULL; an untagged run's model is '(untagged) <run_id>'
(sql/staging/stg_run_configuration.sql), so it is a configuration of its own."""

from __future__ import annotations

RUN_CONFIG_KEYS: tuple[str, ...] = (
    "source",
    "model",
    "schedule",
    "seq_len",
    "chunk_size",
    "tp",
    "pp",
    "vp",
    "hardware",
)
"""The run facts of a configuration, in the order labels name them."""
