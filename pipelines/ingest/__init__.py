"""Format readers: profiler output on disk -> canonical Polars frames (no Dagster, no writes)."""
