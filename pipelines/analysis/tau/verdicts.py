"""Linearity verdict of one tau_k curve, with the evidence that decided it.

Order of the decision (thresholds in `Thresholds`, defaults justified in docs/tau_k.md):

1. ``too_short``: fewer than `min_chunks` distinct chunk indices.
2. Candidate departures from the line, each needing p < `alpha` (Bonferroni-adjusted over the
   candidate positions for the two-segment fits) and a BIC gain over the line: the continuous
   two-segment line (``kinked``), the quadratic (``convex``/``concave``) and a level step inside
   the run (``drift``: a clock/throttle step or a drift of the run, not a shape of tau(k); it
   also needs a departure of at least `min_drift_effect`). The one with the largest BIC gain
   wins. A shape (kink, bend) is flagged only when it matters for the schedule: its largest
   departure from the line is at least `min_effect` of the mean tau (a chunk plan sized from the
   line would mis-predict that chunk by as much) or it moves the predicted VPP bubble ratio by
   at least `min_bubble_pp` percentage points. Below both it is reported in the evidence and the
   curve goes on to the linear tests.
3. ``linear_offset``: the slope is small next to the intercept with confidence: the whole b/a
   interval lies within +-1/`offset_ratio_min` (|a/b| at least `offset_ratio_min`).
4. ``linear``: slope significantly different from zero, relative CI half-width at most
   `max_slope_rel_halfwidth`, R^2 at least `min_r2`.
5. When the line fails those tests, a shape that explains the curve strongly is named rather than
   called noise: the candidate with the largest BIC gain, if that gain is at least
   `noisy_line_min_dbic` (strong evidence on Kass & Raftery's scale), its p < `noisy_line_alpha`
   and it matters (step 2's floor). With one run the AR(1) noise is estimated from the line's
   residuals, so a real bend inflates it and its test alone can miss alpha; the line has then
   already failed, so the looser level trades no `linear` verdict away.
6. otherwise ``too_noisy``.

A line verdict whose curve has a shape that matters at `alpha` <= p < `noisy_line_alpha` names it
in the evidence as not ruled out (with one run: repeat the run to tell a bend from serial
correlation); the label is unchanged.

Outlier chunks (pipelines.analysis.tau.outliers) never enter the tests; they, the Durbin-Watson
statistic and the covariance used are appended to every verdict's evidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pipelines.analysis.tau.fits import CurveFit

VERDICTS = (
    *("linear", "linear_offset", "kinked", "convex", "concave", "drift"),
    *("too_noisy", "too_short"),
)


@dataclass(frozen=True)
class Thresholds:
    """Decision thresholds of the linearity verdict."""

    min_chunks: int = 5
    alpha: float = 0.01
    min_effect: float = 0.05
    min_bubble_pp: float = 0.5
    min_drift_effect: float = 0.02
    offset_ratio_min: float = 10.0
    max_slope_rel_halfwidth: float = 0.5
    min_r2: float = 0.8
    noisy_line_alpha: float = 0.05
    noisy_line_min_dbic: float = 6.0


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


def _ms(x_ns: float) -> str:
    """A slope given in ns per chunk, printed in ms (3 significant digits)."""
    return _fmt(x_ns / 1e6)


def _pp(x: float) -> str:
    """A change of the predicted VPP bubble in percentage points ("n/a" when not predicted)."""
    return f"{x:+.2f} pp" if math.isfinite(x) else "n/a"


def _context(fit: CurveFit) -> str:
    parts = [f"{fit.ci_method}, DW={fit.durbin_watson:.2f}"]
    if fit.outliers:
        parts.append(fit.outliers)
    return "; " + "; ".join(parts)


def classify(fit: CurveFit, th: Thresholds = DEFAULT_THRESHOLDS) -> Verdict:
    """The verdict of one fitted curve."""
    if fit.n_k < th.min_chunks:
        return Verdict("too_short", f"{fit.n_k} chunk indices < {th.min_chunks}")
    if not math.isfinite(fit.slope):
        return Verdict("too_noisy", "the line could not be fitted")
    context = _context(fit)
    shape = "convex" if fit.curvature > 0 else "concave"
    candidates = []  # (dBIC, label, text, matters)
    shapes = []  # (dBIC, p, label, text, matters): every shape with a BIC gain, for step 5
    if fit.breakpoint_dbic > 0:
        text = (
            f"break at k={fit.breakpoint_k:.0f} (slope {_ms(fit.slope_before)} -> "
            f"{_ms(fit.slope_after)} ms/chunk, p_adj={_fmt(fit.breakpoint_p)}, "
            f"effect {fit.breakpoint_effect:.1%}, VPP bubble {_pp(fit.breakpoint_bubble_pp)}, "
            f"dBIC={fit.breakpoint_dbic:.1f})"
        )
        matters = _matters(fit.breakpoint_effect, fit.breakpoint_bubble_pp, th)
        shapes.append((fit.breakpoint_dbic, fit.breakpoint_p, "kinked", text, matters))
    if fit.curvature_dbic > 0:
        text = (
            f"{shape} quadratic term p={_fmt(fit.curvature_p)}, effect "
            f"{fit.curvature_effect:.1%}, VPP bubble {_pp(fit.curvature_bubble_pp)}"
        )
        matters = _matters(fit.curvature_effect, fit.curvature_bubble_pp, th)
        shapes.append((fit.curvature_dbic, fit.curvature_p, shape, text, matters))
    candidates += [(d, label, text, m) for d, p, label, text, m in shapes if p < th.alpha]
    if fit.step_p < th.alpha and fit.step_dbic > 0 and fit.step_effect >= th.min_drift_effect:
        text = (
            f"level step x{1 + fit.step_rel:.3f} from k={fit.step_k:.0f} inside the run "
            f"(p_adj={_fmt(fit.step_p)}, dBIC={fit.step_dbic:.1f}): a drift, not tau(k)"
        )
        candidates.append((fit.step_dbic, "drift", text, True))
    below, drift = "", ""
    if candidates:
        _, label, text, matters = max(candidates, key=lambda c: c[0])
        if label == "drift":  # a disturbance: the line's own tests still decide the shape
            drift = text
            below = f"; {text}"
        elif matters:
            return Verdict(label, text + context, fit.breakpoint_k if label == "kinked" else None)
        else:
            below = (
                f"; {text} below the practical floor ({th.min_effect:.0%} of mean tau, "
                f"{th.min_bubble_pp:g} pp of VPP bubble)"
            )

    below += _not_ruled_out(fit, shapes, th)
    ratio_text = f"a/b={_fmt(fit.ab_ratio)} [{_fmt(fit.ab_lo)}, {_fmt(fit.ab_hi)}]"
    bound = 1 / th.offset_ratio_min
    if math.isfinite(fit.ba_hi) and -bound <= fit.ba_lo and fit.ba_hi <= bound:
        return Verdict(
            "linear_offset",
            f"{ratio_text}: |slope/intercept| <= {_fmt(max(fit.ba_hi, -fit.ba_lo))}"
            f" (<= 1/{th.offset_ratio_min:g}){below}{context}",
        )
    halfwidth = (fit.slope_hi - fit.slope_lo) / 2
    rel = halfwidth / abs(fit.slope) if fit.slope != 0 else math.inf
    line_text = (
        f"slope {_ms(fit.slope)} ms/chunk [{_ms(fit.slope_lo)}, {_ms(fit.slope_hi)}], "
        f"R2={fit.r2:.3f}, {ratio_text}"
    )
    excludes_zero = fit.slope_lo > 0 or fit.slope_hi < 0
    if drift:
        return Verdict("drift", f"{drift}; {line_text}{context}")
    if excludes_zero and rel <= th.max_slope_rel_halfwidth and fit.r2 >= th.min_r2:
        return Verdict("linear", line_text + below + context)
    why = []
    if not excludes_zero:
        why.append("slope CI includes 0")
    if rel > th.max_slope_rel_halfwidth:
        why.append(f"slope CI half-width {_fmt(rel)} of the slope")
    if fit.r2 < th.min_r2:
        why.append(f"R2 {fit.r2:.2f} < {th.min_r2}")
    strong = [
        c for c in shapes if c[0] >= th.noisy_line_min_dbic and c[1] < th.noisy_line_alpha and c[4]
    ]
    if strong:
        _, _, label, text, _ = max(strong, key=lambda c: c[0])
        return Verdict(
            label,
            f"{text}; named at p < {th.noisy_line_alpha:g} with dBIC >= "
            f"{th.noisy_line_min_dbic:g} as the line fails ({'; '.join(why)}){context}",
            fit.breakpoint_k if label == "kinked" else None,
        )
    return Verdict("too_noisy", f"{'; '.join(why)}: {line_text}{below}{context}")


def _not_ruled_out(fit: CurveFit, shapes: list, th: Thresholds) -> str:
    """The evidence of a shape that matters and was not significant at `alpha` but is at
    `noisy_line_alpha`: a line verdict says it could not rule the shape out. With one run the
    AR(1) noise is estimated from the line's residuals, which a bend inflates, so one run
    cannot tell a bend from serial correlation; repeats can (their pure error holds no shape)."""
    weak = [c for c in shapes if th.alpha <= c[1] < th.noisy_line_alpha and c[4]]
    if not weak:
        return ""
    _, _, _, text, _ = max(weak, key=lambda c: c[0])
    hint = (
        "; one run's AR(1) noise comes from the line's residuals, which a bend inflates: "
        "repeat the run to tell a bend from serial correlation"
        if fit.n_runs == 1
        else ""
    )
    return f"; not ruled out at p < {th.noisy_line_alpha:g}: {text}{hint}"


def _matters(effect: float, bubble_pp: float, th: Thresholds) -> bool:
    """Whether a departure from the line is large enough to change a schedule decision."""
    big_departure = math.isfinite(effect) and effect >= th.min_effect
    big_bubble = math.isfinite(bubble_pp) and abs(bubble_pp) >= th.min_bubble_pp
    return big_departure or big_bubble
