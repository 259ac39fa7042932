"""Nightly use of the change-point search: the history is re-scanned every night, so what the
scans of the shorter histories said is part of the record. It is recomputed here from the
history itself (the scan of the first m nights is what the night-m scan saw), which needs no
stored state and gives the same answer to anyone who re-runs it:

* `nightly_confirmations`: every point each nightly scan would have confirmed, with its night;
* `withdrawn_points`: points a past nightly scan confirmed that the latest scan no longer finds
  (no point whose date set, widened by 2 nights, meets theirs: contradicted by the nights
  since): reported with a line, not dropped in silence.

The persistence rule of detect_change_points (`changepoints.persists`: a confirmed point must
still stand in the histories one to ten nights shorter, unless its p is small) is what keeps
a clean series re-scanned every night for a quarter from confirming a point in more than about
2 % of series
(docs/regressions.md, `tracereplay bench changepoints`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines.analysis.changes.changepoint_defaults import (
    DEFAULT_CONFIRM,
    DEFAULT_MAX_PVALUE,
    DEFAULT_MIN_MAGNITUDE,
    DEFAULT_MIN_SEGMENT,
    DEFAULT_PERSIST,
    DEFAULT_SPIKE_SIGMAS,
    FAST_CONFIRM_SHARE,
    PERSIST_PVALUE,
)
from pipelines.analysis.changes.changepoints import (
    ChangePoint,
    persists,
    same_change,
    searched_scan,
)


@dataclass(frozen=True)
class NightlyConfirmation:
    """A point the scan of the first `nights` values confirmed."""

    nights: int
    point: ChangePoint


def nightly_confirmations(
    values: np.ndarray,
    *,
    first: int | None = None,
    min_magnitude: float = DEFAULT_MIN_MAGNITUDE,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    confirm: int = DEFAULT_CONFIRM,
    spike_sigmas: float = DEFAULT_SPIKE_SIGMAS,
    persist: int = DEFAULT_PERSIST,
    persist_pvalue: float = PERSIST_PVALUE,
) -> list[NightlyConfirmation]:
    """The confirmed points of every nightly scan of the finite values, from the history of
    `first` values (default 2 min_segment, the shortest that can hold a point) to all of them:
    what detect_change_points would have confirmed each night (indexes count finite values)."""
    y = np.asarray(values, dtype=float)
    y = y[np.isfinite(y)]
    args = (min_magnitude, max_pvalue, min_segment, confirm, spike_sigmas)
    start = 2 * min_segment if first is None else max(1, first)
    fast = max_pvalue * FAST_CONFIRM_SHARE
    rule = (fast, persist, persist_pvalue, min_segment, spike_sigmas)
    out = []
    for m in range(start, len(y) + 1):
        found = searched_scan(y[:m], *args)
        out += [
            NightlyConfirmation(m, cp)
            for cp in found
            if cp.status == "confirmed" and persists(y[:m], cp, found, *rule)
        ]
    return out


def withdrawn_points(
    confirmations: list[NightlyConfirmation], latest: list[ChangePoint]
) -> list[NightlyConfirmation]:
    """The last confirmation of each point that the latest scan (any status) no longer finds
    (`same_change`), oldest first."""
    last: list[NightlyConfirmation] = []
    for c in confirmations:  # one entry per change: its re-datings are the same change
        last = [k for k in last if not same_change(k.point, c.point)] + [c]
    gone = [c for c in last if not any(same_change(c.point, cp) for cp in latest)]
    return sorted(gone, key=lambda c: c.point.index)
