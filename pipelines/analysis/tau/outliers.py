"""Outlier chunks of one tau_k curve, found before any shape is tested.

A chunk that one slow kernel, an HCCL retry or a host stall made x1.3 or x2 slower moves a whole
least-squares fit and fakes kinks. The screen works on the per-k mean curve (runs pooled): for
each chunk index k it fits the continuous shapes the verdicts test (line, quadratic, the
two-segment lines with two or more chunk indices on each side) and two smooth bends steeper at
the start (a + b k + c sqrt(k - k0), a + b k + c log(1 + k - k0)) to the *other* chunks, weighted by
1/tau^2 (the noise is multiplicative), keeps the one BIC prefers and predicts tau_k from it. The
externally studentised relative residual (prediction error over its standard error) is compared
with the t quantile of a Bonferroni-adjusted two-sided test at OUTLIER_ALPHA over the chunk
indices; a chunk is an outlier when it fails that test *and* lies at least OUTLIER_MIN_REL off
its prediction (a practical floor: a chunk 3 % off is noise, not a slow chunk). The worst
outlier is removed and the screen repeated, at most MAX_OUTLIER_SHARE of the chunk indices.

The first and last chunk index are screened only when *slower* than predicted. Their prediction
is an extrapolation; before the smooth bends joined the shapes, a square-root or logarithmic
start left chunk 0 far below the line through the others, and on such curves (16 chunks, 3 runs,
3 % noise) the screen called chunk 0 a x0.33 outlier, then chunk 1 a x1.4 one (false outliers
on 72-100 % of square-root curves, 24.5-100 % of logarithmic ones, N = 8-21; 3-19 % and 1-8 % with
the bends and this rule). The disturbances the screen is for (a slow kernel, an HCCL retry, a
host stall, a first step that compiles graphs) only ever slow a chunk down, so an edge chunk
faster than the extrapolation is left to the shape tests. For the same reason a first chunk
on its own path (no prefix: tau_1/tau_0 = 3.2 at 128-token chunks on FlashInfer) is one of the
shapes: the line through chunks 1 on plus chunk 0's own level; without it, a fast chunk 0 made
chunks 1-6 of such a curve "slow" outliers (issue 32). Chunk 1 is judged under both readings of
chunk 0 and is an outlier only under both (a knee at k = 2 looks, without chunk 1, like chunk 0
on its own path): chunk 0 on its own path (its own level, the line through chunks 2 on) and
chunk 0 the start of the curve (every shape above). The own-path reading once took every shape
as well, and then a knee at k = 3 through chunks 0 and 2 often fitted the others better by
noise: chunk 1 of a first-chunk curve (tau_1/tau_0 = 3.2, 2 % noise, N = 16) was set aside as a
x1.1-1.4 outlier in 25 of the first 65 draws of the taxonomy's cell (the verdict mostly still
right), and the knee read at k = 3-4 in 13 of 2,000 (docs/tau_k.md §4).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

OUTLIER_ALPHA = 0.01
OUTLIER_MIN_REL = 0.10
MAX_OUTLIER_SHARE = 0.2
BIC_TIE = 1e-9
"""BIC differences smaller than this are rounding: the shapes are tied, and a point is judged
under the tied shape it fits best."""


@dataclass(frozen=True)
class OutlierScreen:
    """Which points to keep, and the outlier chunks as evidence text (`k=7 (x2.00)`)."""

    keep: np.ndarray
    text: str
    k_out: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        return len(self.k_out)


JUMP_COLUMNS = 4
"""A broken line's design ([1, k, 1(k >= kb), (k - kb)+]): the only shape with four columns."""


def _designs(k: np.ndarray, first: bool = True, jumps: bool = False) -> list[np.ndarray]:
    centre = k.mean()
    designs = [
        np.column_stack([np.ones_like(k), k]),
        np.column_stack([np.ones_like(k), k - centre, (k - centre) ** 2]),
    ]
    # smooth bends steeper than the quadratic at one end (a square-root or logarithmic start)
    start = k - k.min()
    designs.append(np.column_stack([np.ones_like(k), k, np.sqrt(start)]))
    designs.append(np.column_stack([np.ones_like(k), k, np.log1p(start)]))
    if first and k.min() == 0:  # chunk 0 on its own path (no prefix), a line from chunk 1 on
        designs.append(np.column_stack([np.ones_like(k), k, (k == 0).astype(float)]))
    # hinges at measured chunk indices (every integer on a consecutive grid; a table's gapped
    # grid places a break no finer than its points: fits._positions)
    for kb in np.unique(k):
        if (k < kb).sum() >= 2 and (k > kb).sum() >= 2:
            designs.append(np.column_stack([np.ones_like(k), k, np.maximum(k - kb, 0.0)]))
    # a latency table's jump (fits._jump): the line broken at a measured index, its own level
    # and slope on each side; last, so that a simpler shape fitting as well is kept
    for kb in np.unique(k) if jumps else ():
        if (k < kb).sum() >= 2 and (k > kb).sum() >= 2:
            step = (k >= kb).astype(float)
            designs.append(np.column_stack([np.ones_like(k), k, step, np.maximum(k - kb, 0.0)]))
    return designs


def _determined(Xw: np.ndarray) -> np.ndarray:
    """Whether each stacked design (…, n, p) has full column rank: a broken line left with one
    chunk index on a side has a free parameter, and its prediction there is arbitrary."""
    sv = np.linalg.svd(Xw, compute_uv=False)
    return sv[..., -1] > sv[..., 0] * max(Xw.shape[-2:]) * np.finfo(float).eps


def _studentised(
    k: np.ndarray, y: np.ndarray, i: int, jumps: bool = False
) -> tuple[float, float, float]:
    """(t statistic, prediction, df) of point i against the best shape fitted to the others.
    Chunk 1 (with chunk 0 present) against both readings of chunk 0, whichever it fits better:
    its own path (chunk 0's own level and the line through chunks 2 on, nothing else) or the
    start of the curve (every shape through chunk 0): without chunk 1 the others cannot tell a
    first-chunk knee from a knee at k = 2 or 3, and a chunk is only called an outlier under both.
    The own-path reading was once every shape plus chunk 0's level, in which a knee at k = 3
    through chunks 0 and 2 fits the others as well as chunk 0's own level does and, chosen by
    noise, made a true chunk 1 a x1.2-1.3 outlier: the first-chunk knee then read as a knee at
    k = 3-4 (13 of 2,000 draws of the taxonomy's first-chunk cell, docs/tau_k.md §4).
    The screen computes it for every i of a pass at once (_studentised_pass); this one point at
    a time is the reference it is tested against."""
    if k[i] == 1 and k.min() == 0:
        own_path = [np.column_stack([np.ones_like(k), k, (k == 0).astype(float)])]
        through_zero = _designs(k, first=False, jumps=jumps)
        both = [_studentised_with(k, y, i, d) for d in (own_path, through_zero)]
        return min(both, key=lambda r: abs(r[0]))
    return _studentised_with(k, y, i, _designs(k, jumps=jumps))


def _studentised_with(
    k: np.ndarray, y: np.ndarray, i: int, designs: list[np.ndarray]
) -> tuple[float, float, float]:
    others = np.arange(len(k)) != i
    fits = []
    for X in designs:
        Xo, yo = X[others], y[others]
        w = 1.0 / yo
        p, m = X.shape[1], len(yo)
        if m - p < 2:
            continue
        if p == JUMP_COLUMNS and not _determined(Xo * w[:, None]):
            continue
        coef, *_ = np.linalg.lstsq(Xo * w[:, None], yo * w, rcond=None)
        resid = (yo - Xo @ coef) * w
        sse = float(resid @ resid)
        bic = m * math.log(max(sse, 1e-300) / m) + p * math.log(m)
        fits.append((bic, X, coef, sse, m - p, Xo * w[:, None]))
    if not fits:
        return 0.0, float(y[i]), 0.0
    least = min(f[0] for f in fits)
    tied = [
        _point_t(X, coef, sse, df, Xw, y, i)
        for bic, X, coef, sse, df, Xw in fits
        if bic <= least + BIC_TIE
    ]
    return min(tied, key=lambda r: abs(r[0]))


def _point_t(X, coef, sse: float, df: int, Xw: np.ndarray, y: np.ndarray, i: int):
    """(t, prediction, df) of point i under one leave-one-out fit (Xw: the others, weighted)."""
    pred = float(X[i] @ coef)
    if pred <= 0:
        return 0.0, pred, df
    xi = X[i] / pred
    try:
        lever = float(xi @ np.linalg.solve(Xw.T @ Xw, xi))
    except np.linalg.LinAlgError:
        return 0.0, pred, df
    se = math.sqrt(sse / df * (1 + lever))
    return ((y[i] - pred) / pred) / se if se > 0 else math.inf, pred, df


def _studentised_all(
    k: np.ndarray, y: np.ndarray, designs: list[np.ndarray], rows: list[int] | None = None
) -> list[tuple[float, float, float]]:
    """_studentised_with for every point i at once: each design's m leave-one-out weighted
    least-squares fits as one stacked pseudo-inverse (numpy's SVD, as lstsq; the same choice of
    shape, t and prediction to rounding), not m x designs lstsq calls. The screen spent 2/3 of
    an aiconfigurator table's fit time in those calls (docs/tau_k.md §4 "Fitting a whole
    table"). `rows`: only these points (every one when None), in that order."""
    m = len(k)
    rows = list(range(m)) if rows is None else rows
    others = np.array([np.delete(np.arange(m), i) for i in rows])  # (rows, m-1)
    yo = y[others]
    w = 1.0 / yo
    fits: list[tuple] = []
    for X in designs:
        p, mm = X.shape[1], m - 1
        if mm - p < 2:
            continue
        Xo = X[others]  # (rows, m-1, p)
        Xw = Xo * w[:, :, None]
        coef = np.einsum("ipn,in->ip", np.linalg.pinv(Xw), yo * w)
        resid = (yo - np.einsum("inp,ip->in", Xo, coef)) * w
        sse = np.einsum("in,in->i", resid, resid)
        bic = mm * np.log(np.maximum(sse, 1e-300) / mm) + p * math.log(mm)
        if p == JUMP_COLUMNS:
            bic = np.where(_determined(Xw), bic, np.inf)
        fits.append((bic, X, coef, sse, mm - p, Xw))
    if not fits:
        return [(0.0, float(y[i]), 0.0) for i in rows]
    least = np.min([f[0] for f in fits], axis=0)
    results = []
    for j, i in enumerate(rows):
        # shapes that fit the others exactly alike (within rounding: BIC_TIE) are readings the
        # others cannot tell apart, and the point is judged under the one it fits best: a jump
        # whose first index after is left out fits the others as well placed one index later
        # (the point then on the other side), chunk 0 on its own path as a hinge at k = 2
        tied = [
            _point_t(X, coef[j], float(sse[j]), df, Xw[j], y, i)
            for bic, X, coef, sse, df, Xw in fits
            if np.isfinite(bic[j]) and bic[j] <= least[j] + BIC_TIE
        ]
        results.append(min(tied, key=lambda r: abs(r[0])) if tied else (0.0, float(y[i]), 0.0))
    return results


def _studentised_pass(
    k: np.ndarray, y: np.ndarray, jumps: bool = False
) -> list[tuple[float, float, float]]:
    """_studentised of every point of one pass of the screen (chunk 1 under both readings of
    chunk 0, the others against every shape), the leave-one-out fits stacked per design."""
    results = _studentised_all(k, y, _designs(k, jumps=jumps))
    if k.min() == 0 and 1 in k:
        i = int(np.flatnonzero(k == 1)[0])
        own_path = [np.column_stack([np.ones_like(k), k, (k == 0).astype(float)])]
        through_zero = _designs(k, first=False, jumps=jumps)
        both = [_studentised_all(k, y, d, [i])[0] for d in (own_path, through_zero)]
        results[i] = min(both, key=lambda r: abs(r[0]))
    return results


@functools.lru_cache(maxsize=1024)
def _cutoff(n: int, df: float) -> float:
    """The two-sided t cutoff at OUTLIER_ALPHA, Bonferroni-adjusted over n chunk indices."""
    return float(stats.t.ppf(1 - OUTLIER_ALPHA / (2 * n), df))


def screen_outliers(k: np.ndarray, y: np.ndarray, jumps: bool = False) -> OutlierScreen:
    """The outlier screen of the points (k, y) of one curve (runs pooled). `jumps`: a latency
    table's curve, whose shapes include the broken line (fits._jump): a jump in tau(k), not a
    run of slow chunks after it."""
    keep = np.ones(len(y), dtype=bool)
    k_grid = np.unique(k)
    means = np.array([y[k == kk].mean() for kk in k_grid])
    if len(k_grid) < 6 or np.any(means <= 0):
        return OutlierScreen(keep, "")
    alive = np.ones(len(k_grid), dtype=bool)
    found: list[tuple[int, float]] = []
    while len(found) < MAX_OUTLIER_SHARE * len(k_grid):
        idx = np.flatnonzero(alive)
        kk, yy = k_grid[idx], means[idx]
        worst = None
        studentised = _studentised_pass(kk, yy, jumps)
        for j in range(len(idx)):
            t, pred, df = studentised[j]
            if df < 2:
                continue
            cutoff = _cutoff(len(idx), df)
            rel = yy[j] / pred - 1 if pred > 0 else 0.0
            edge = j in (0, len(idx) - 1)
            significant = abs(t) > cutoff and abs(rel) >= OUTLIER_MIN_REL and (rel > 0 or not edge)
            if significant and (worst is None or abs(t) > worst[0]):
                worst = (abs(t), j, yy[j] / pred)
        if worst is None:
            break
        _, j, factor = worst
        alive[idx[j]] = False
        found.append((int(kk[j]), float(factor)))
    if not found:
        return OutlierScreen(keep, "")
    found.sort()
    out_k = tuple(kk for kk, _ in found)
    keep = ~np.isin(k, out_k)
    text = "outliers: " + ", ".join(f"k={kk} (x{f:.2f})" for kk, f in found)
    return OutlierScreen(keep, text, out_k)
