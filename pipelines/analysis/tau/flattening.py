"""When a linear tau_k curve is `flattened`: the a/b beyond which VPP has little left to balance.

For an affine curve tau_k = a + b k (k = 0 .. N-1, r = a/b) the bubble VPP (P = 2, vp = 2, free
transfers, one request) removes against CPP is gain(r, N) = cpp_bubble_ratio - vpp_bubble_ratio
(exact identities, pipelines.analysis.tau.fits; g(r, N) in docs/tau_k.md §4). It is largest for a
proportional curve (r = 1, the paper's tau_k = (k+1)t) and shrinks as r grows. The `gain share`
gain(r, N) / gain(1, N) is the part of a proportional curve's VPP gain that the curve keeps; a
curve is `flattened` when its whole a/b interval lies where the share is at most
`FLAT_GAIN_SHARE` (docs/tau_k.md §4 "flattened": why 0.73).

For large N the share is about (N + 2) / (N + 2r), and with the curve's growth G = tau_{N-1}/tau_0
= 1 + (N-1)/r it is about (G - 1)/(G + 1): share 0.73 is a curve that grows about 6.4x over the
request where a proportional one grows N-fold.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize

FLAT_GAIN_SHARE = 0.73
"""A curve keeping at most this share of a proportional curve's VPP gain is `flattened`: the
middle of the gap the public tables leave between the sparse modules that must be flagged (every
one flattened from 0.691) and the dense attention kernels at chunks >= 512 that must stay linear
(the first flattened at 0.763): docs/tau_k.md §4 "flattened: the bound and why"."""


def _bubbles(r: float, n: int) -> tuple[float, float]:
    from pipelines.analysis.tau.fits import cpp_bubble_ratio, vpp_bubble_ratio

    tau = r + np.arange(n, dtype=float)
    return cpp_bubble_ratio(tau), vpp_bubble_ratio(tau)


def vpp_gain(r: float, n: int) -> float:
    """CPP's bubble ratio minus VPP's for tau_k = r + k, k = 0 .. n-1 (a/b = r)."""
    cpp, vpp = _bubbles(r, n)
    return cpp - vpp


def gain_share(r: float, n: int) -> float:
    """gain(r, n) / gain(1, n): the share of a proportional curve's VPP gain an affine curve with
    a/b = r keeps (1 at r = 1; 0 as r -> inf; NaN for n < 3)."""
    if n < 3 or not math.isfinite(r):
        return 0.0 if math.isinf(r) and n >= 3 else math.nan
    return vpp_gain(r, n) / vpp_gain(1.0, n)


@functools.lru_cache(maxsize=4096)
def flat_bound(n: int, share: float = FLAT_GAIN_SHARE) -> float:
    """The a/b at which an affine curve of n chunks keeps `share` of a proportional curve's VPP
    gain: a curve whose whole a/b interval lies beyond it is `flattened` (NaN for n < 3)."""
    if n < 3 or not 0 < share < 1:
        return math.nan
    return float(optimize.brentq(lambda r: gain_share(r, n) - share, 1.0, 1e7, xtol=1e-6))
