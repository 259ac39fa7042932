"""Small synthetic tau_k curves, one per verdict (times in ns)."""

from __future__ import annotations

import numpy as np

MS = 1_000_000.0


def noisy(curve: np.ndarray, rel_sd: float, seed: int) -> np.ndarray:
    """Multiplicative Gaussian noise."""
    rng = np.random.default_rng(seed)
    return curve * (1 + rel_sd * rng.standard_normal(len(curve)))


def linear(n: int = 16, seed: int = 0, rel_sd: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
    """tau_k = (k+1) t, the VPP paper's eq. 2."""
    k = np.arange(n, dtype=float)
    return k, noisy(MS * (k + 1), rel_sd, seed)


def offset(n: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Affine with a dominant intercept (a/b = 30): a collapsed slope, as DSA past p=2048."""
    k = np.arange(n, dtype=float)
    return k, noisy(30 * MS + MS * k, 0.01, seed)


def kinked(n: int = 16, seed: int = 0, at: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Dense slope up to k=at, then a tenth of it."""
    k = np.arange(n, dtype=float)
    curve = np.where(k <= at, MS * (k + 1), MS * (at + 1) + 0.1 * MS * (k - at))
    return k, noisy(curve, 0.01, seed)


def convex(n: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(n, dtype=float)
    return k, noisy(MS * (1 + k + 0.15 * k**2), 0.01, seed)


def concave(n: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(n, dtype=float)
    return k, noisy(MS * (1 + 2 * k - 0.06 * k**2), 0.01, seed)


def flat(n: int = 8, seed: int = 0, rel_sd: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
    """Pure noise around a constant."""
    k = np.arange(n, dtype=float)
    return k, noisy(np.full(n, 5 * MS), rel_sd, seed)


def weak(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A small slope drowned in 30% noise over 6 chunks."""
    k = np.arange(6, dtype=float)
    return k, noisy(MS * (5 + 0.5 * k), 0.3, seed)
