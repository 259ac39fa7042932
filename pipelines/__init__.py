"""tracereplay's library: ingest, analysis, simulator, replay and checks (Dagster-free)."""

import os

# Polars allocates with its own jemalloc (env prefix _RJEM_), which keeps the pages each
# thread's arena frees for ~10 s before giving them back. A streamed trace is read by many
# Polars threads in turn, so that memory piled up: a 4 GB trace's slices collected at 3.2 GB RSS,
# 1.3 GB with the pages returned at once (docs/bench_ingest.md "Where the streamed RSS grows").
# Set before Polars is first imported; a value already in the environment wins.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
