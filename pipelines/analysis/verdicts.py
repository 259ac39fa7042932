"""Linearity verdict of one tau_k curve, with the evidence that decided it.

Order of the decision (thresholds in `Thresholds`, defaults justified in docs/tau_k.md):

1. ``too_short``: fewer than `min_chunks` distinct chunk indices.
2. A non-linear shape needs significance *and* size: ``kinked`` when the best two-segment fit's
   hinge term has a Bonferroni-adjusted p < `alpha`, its largest departure from the line is at
   least `min_effect` of the mean tau and BIC prefers it; ``convex``/``concave`` when the quadratic
   term has p < `alpha`, a departure of at least `min_effect` and BIC prefers it. When both
   qualify, the larger BIC gain over the line wins.
3. ``linear_offset``: the slope is small next to the intercept with confidence: the whole b/a
   interval lies within +-1/`offset_ratio_min` (|a/b| at least `offset_ratio_min`).
4. ``linear``: slope significantly different from zero, relative CI half-width at most
   `max_slope_rel_halfwidth`, R^2 at least `min_r2`.
5. otherwise ``too_noisy``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pipelines.analysis.fits import CurveFit

VERDICTS = ("linear", "linear_offset", "kinked", "convex", "concave", "too_noisy", "too_short")


@dataclass(frozen=True)
class Thresholds:
    """Decision thresholds of the linearity verdict."""

    min_chunks: int = 5
    alpha: float = 0.01
    min_effect: float = 0.02
    offset_ratio_min: float = 10.0
    max_slope_rel_halfwidth: float = 0.5
    min_r2: float = 0.8


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class Verdict:
    """A curve's label, the breakpoint when kinked, and a one-line reason."""

    label: str
    evidence: str
    breakpoint_k: float | None = None


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.3g}"


def classify(fit: CurveFit, th: Thresholds = DEFAULT_THRESHOLDS) -> Verdict:
    """The verdict of one fitted curve."""
    if fit.n_k < th.min_chunks:
        return Verdict("too_short", f"{fit.n_k} chunk indices < {th.min_chunks}")
    if not math.isfinite(fit.slope):
        return Verdict("too_noisy", "the line could not be fitted")

    kink_ok = (
        fit.breakpoint_p < th.alpha
        and fit.breakpoint_effect >= th.min_effect
        and fit.breakpoint_dbic > 0
    )
    curve_ok = (
        fit.curvature_p < th.alpha
        and fit.curvature_effect >= th.min_effect
        and fit.curvature_dbic > 0
    )
    kink_text = (
        f"break at k={fit.breakpoint_k:.0f} (slope {_fmt(fit.slope_before)} -> "
        f"{_fmt(fit.slope_after)} ns/chunk, p_adj={_fmt(fit.breakpoint_p)}, "
        f"effect {fit.breakpoint_effect:.1%}, dBIC={fit.breakpoint_dbic:.1f})"
    )
    shape = "convex" if fit.curvature > 0 else "concave"
    curve_text = (
        f"{shape} quadratic term p={_fmt(fit.curvature_p)}, effect {fit.curvature_effect:.1%}"
    )
    if kink_ok and (not curve_ok or fit.breakpoint_dbic >= fit.curvature_dbic):
        return Verdict("kinked", kink_text, fit.breakpoint_k)
    if curve_ok:
        return Verdict(shape, curve_text)

    ratio_text = f"a/b={_fmt(fit.ab_ratio)} [{_fmt(fit.ab_lo)}, {_fmt(fit.ab_hi)}]"
    bound = 1 / th.offset_ratio_min
    if math.isfinite(fit.ba_hi) and -bound <= fit.ba_lo and fit.ba_hi <= bound:
        return Verdict(
            "linear_offset",
            f"{ratio_text}: |slope/intercept| <= {_fmt(max(fit.ba_hi, -fit.ba_lo))}"
            f" (<= 1/{th.offset_ratio_min:g})",
        )
    halfwidth = (fit.slope_hi - fit.slope_lo) / 2
    rel = halfwidth / abs(fit.slope) if fit.slope != 0 else math.inf
    line_text = (
        f"slope {_fmt(fit.slope)} ns/chunk [{_fmt(fit.slope_lo)}, {_fmt(fit.slope_hi)}], "
        f"R2={fit.r2:.3f}, {ratio_text}"
    )
    excludes_zero = fit.slope_lo > 0 or fit.slope_hi < 0
    if excludes_zero and rel <= th.max_slope_rel_halfwidth and fit.r2 >= th.min_r2:
        return Verdict("linear", line_text)
    why = []
    if not excludes_zero:
        why.append("slope CI includes 0")
    if rel > th.max_slope_rel_halfwidth:
        why.append(f"slope CI half-width {_fmt(rel)} of the slope")
    if fit.r2 < th.min_r2:
        why.append(f"R2 {fit.r2:.2f} < {th.min_r2}")
    return Verdict("too_noisy", f"{'; '.join(why)}: {line_text}")
