"""Default thresholds of the change-point search (docs/regressions.md has how each was measured).

Kept apart from pipelines.analysis.changes.changepoints so that `tracereplay regressions --help`
can print
them without importing ruptures and scipy."""

DEFAULT_MIN_MAGNITUDE = 0.015
"""Smallest change of the segment medians that is reported (relative)."""
DEFAULT_MAX_PVALUE = 0.0025
"""Largest p of a point's searched split (the search paid for,
pipelines.analysis.changes.split_null)."""
TAIL_PVALUE = 1e-4
"""The last 2-4 runs' t test (one test per tail length, no search over positions)."""
DEFAULT_MIN_SEGMENT = 5
"""Fewest runs on each side of a point."""
DEFAULT_CONFIRM = 5
"""Runs after a point before it is confirmed; fewer: `pending`."""
DEFAULT_SPIKE_SIGMAS = 3.5
"""Robust sigmas off its neighbours' medians that make a single night a spike."""
SPIKE_WINDOW = 3
"""Nights on each side a spike is judged against."""
