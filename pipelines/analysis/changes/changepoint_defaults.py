"""Default thresholds of the change-point search (docs/regressions.md has how each was measured).

Kept apart from pipelines.analysis.changes.changepoints so that `tracereplay regressions --help`
can print
them without importing ruptures and scipy."""

DEFAULT_MIN_MAGNITUDE = 0.015
"""Smallest change of the segment medians that is reported (relative)."""
DEFAULT_MAX_PVALUE = 0.0035
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
DEFAULT_PERSIST = 11
"""A confirmed point must still stand in the histories one to ten nights shorter (nightly
re-scans: one scan's false alarm mostly vanishes as nights are taken away): its segment there
keeps a split within PERSIST_WINDOW nights of it with a searched-split p of at most
PERSIST_PVALUE..."""
PERSIST_PVALUE = 0.1
"""... (a looser level than the gate's: the earlier histories are asked about this point only;
so a point needs 5 + 10 nights after it, the last history's 5 included, to be confirmed)..."""
FAST_CONFIRM_SHARE = 0.04
"""... unless its p is at most this share of the largest p (0.00014 at the default 0.0035)."""
PERSIST_WINDOW = 2
"""Nights by which an earlier history's split may differ from the point and still be it."""
CONFIRM_MIN_MAGNITUDE = 0.018
"""Smallest |magnitude| (ratio of geometric means - 1) of a confirmed point; a smaller one stays
pending: false alarms pass the gate with small magnitudes where segments are long, a +3 % step
in 2 % noise seldom estimates under it (docs/regressions.md, the ±2 nights target)."""
PERSIST_MIN_BEFORE = 10
"""Nights before it (tested, since the previous point) that a point needs to be confirmed when
its p is not in the fast lane: the false alarms that survive persistence come most often from
young histories and points just past the first 5 nights (docs/regressions.md §re-scans)."""
DEFAULT_FDR = 0.05
"""Benjamini-Hochberg level across the series of one scan: a confirmed regression with a larger
q is listed but not counted (exit status 0)."""
WITHDRAW_LOOKBACK = 30
"""Nightly scans re-run to find points confirmed then contradicted (withdrawn)."""
RESCAN_CONFIRM_RATE = 0.017
"""Share of clean series (2 % run noise) that some nightly scan over 90 nights confirms a point
in, measured by `tracereplay bench changepoints` (docs/regressions.md §re-scans): what
`tracereplay regressions` prints as the false alarms to expect from nightly use."""
