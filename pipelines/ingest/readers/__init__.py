"""Format readers: one profiler file or folder on disk -> canonical Polars frames (no writes)."""
