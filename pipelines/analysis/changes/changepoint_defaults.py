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
DEFAULT_PERSIST = 4
"""A confirmed point must also be found by the scans of the histories one, two and three nights
shorter (nightly re-scans: one scan's false alarm mostly vanishes the next night)..."""
FAST_CONFIRM_SHARE = 0.04
"""... unless its p is at most this share of the largest p (0.0001 at the default 0.0025)."""
PERSIST_WINDOW = 2
"""Nights by which an earlier scan's point may differ and still be the same point."""
DEFAULT_FDR = 0.05
"""Benjamini-Hochberg level across the series of one scan: a confirmed regression with a larger
q is listed but not counted (exit status 0)."""
WITHDRAW_LOOKBACK = 30
"""Nightly scans re-run to find points confirmed then contradicted (withdrawn)."""
RESCAN_CONFIRM_RATE = 0.018
"""Share of clean series (2 % run noise) that some nightly scan over 90 nights confirms a point
in, measured by `tracereplay bench changepoints` (docs/regressions.md §re-scans): what
`tracereplay regressions` prints as the false alarms to expect from nightly use."""
