"""Verdict of one tau_k curve, with the evidence that decided it: its shape, then its scale.

The taxonomy (docs/tau_k.md §4) separates the shape of tau(k) from its scale a/b:

* shapes (a departure from the line that is significant and matters for a schedule):
  ``knee`` (a break at a stated k: the continuous two-segment line, or chunk 0 on its own path,
  reported as ``k=0->1``), ``staircase`` (steps every n chunk indices), ``convex`` / ``concave``;
* scale of a straight curve: ``linear`` (a/b small enough for VPP to balance most of what it
  balances on a proportional curve) or ``flattened`` (the whole a/b interval beyond the bound
  at which VPP keeps at most `flat_gain_share` of a proportional curve's gain,
  pipelines.analysis.tau.flattening);
* inconclusive: ``too_short``, ``too_noisy``, and ``drift`` (a level step inside the run, not a
  shape of tau(k));
* ``cost_model`` (pipelines.analysis.tau.cost_law): a variable-chunk (DCPP) curve, fitted by
  tau(c, p) and never judged against k.

Earlier names, still read from stored tables: ``kinked`` = ``knee``, ``linear_offset`` =
``flattened`` (LEGACY_VERDICTS).

Order of the decision (thresholds in `Thresholds`, defaults justified in docs/tau_k.md):

1. ``too_short``: fewer than `min_chunks` distinct chunk indices.
2. Candidate departures from the line, each needing p < `alpha` (Bonferroni-adjusted over the
   searched positions for the two-segment, staircase and step fits) and a BIC gain over the
   line: the two-segment line (``knee``), the sawtooth of a staircase (``staircase``), the
   quadratic (``convex``/``concave``) and a level step inside the run (``drift``; it also needs
   a departure of at least `min_drift_effect`). The one with the largest BIC gain wins. A
   first chunk off the line through chunks 1 on (fits._first_chunk) is tested first: when it
   is significant and matters the curve is a ``knee`` at k=0->1, and the other shapes were
   tested on chunks 1 on only (a knee at 0->1 is never read as a kink further on; a second
   knee there is reported beside it). A shape is flagged only when it matters for the
   schedule: its largest departure from the line is at least `min_effect` of the mean tau or
   it moves the predicted VPP bubble ratio by at least `min_bubble_pp` percentage points.
   Below both it is reported in the evidence and the curve goes on to the line's tests.
3. ``flattened``: the whole b/a interval lies within +-1/r*, r* = flattening.flat_bound(N,
   `flat_gain_share`) for the request's N = k_max + 1 chunks.
4. ``linear``: slope significantly different from zero, relative CI half-width at most
   `max_slope_rel_halfwidth`, R^2 at least `min_r2`.
5. When the line fails those tests, a shape that explains the curve strongly is named rather than
   called noise: the candidate with the largest BIC gain, if that gain is at least
   `noisy_line_min_dbic` (strong evidence on Kass & Raftery's scale), its p < `noisy_line_alpha`
   and it matters (step 2's floor).
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
from typing import TYPE_CHECKING

from pipelines.analysis.tau.flattening import FLAT_GAIN_SHARE, flat_bound, gain_share

SHAPE_VERDICTS = ("knee", "staircase", "convex", "concave")
VERDICTS = (
    *("linear", "flattened", *SHAPE_VERDICTS, "drift"),
    *("too_noisy", "too_short", "cost_model"),
)
if TYPE_CHECKING:  # statsmodels (fits) takes seconds to import: not where Dagster loads
    from pipelines.analysis.tau.fits import CurveFit

LEGACY_VERDICTS = {"kinked": "knee", "linear_offset": "flattened"}
"""Names of earlier versions (stored tau_fits tables, old JSON) and the verdict each is now."""


def canonical_verdict(label: str | None) -> str | None:
    """The current name of a verdict label (a legacy name mapped, others unchanged)."""
    return LEGACY_VERDICTS.get(label, label) if label is not None else None


@dataclass(frozen=True)
class Thresholds:
    """Decision thresholds of the verdict."""

    min_chunks: int = 5
    alpha: float = 0.01
    min_effect: float = 0.05
    min_bubble_pp: float = 0.5
    min_drift_effect: float = 0.02
    flat_gain_share: float = FLAT_GAIN_SHARE
    max_slope_rel_halfwidth: float = 0.5
    min_r2: float = 0.8
    noisy_line_alpha: float = 0.05
    noisy_line_min_dbic: float = 6.0


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class Verdict:
    """A curve's label, where its knee is (`knee_at`: "0->1", "12" or "0->1, 12"; the
    breakpoint k of the two-segment line in `breakpoint_k`, 1 for a knee at 0->1), the a/b
    bound beyond which it would be `flattened`, and a one-line reason."""

    label: str
    evidence: str
    breakpoint_k: float | None = None
    knee_at: str = ""
    flat_bound: float = math.nan


@dataclass(frozen=True)
class _Shape:
    dbic: float
    p: float
    label: str
    text: str
    matters: bool
    knee_at: str = ""
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


def _positive(x: float) -> bool:
    return math.isfinite(x) and x > 0


def _shapes(fit: CurveFit, th: Thresholds) -> tuple[list[_Shape], _Shape | None]:
    """Every shape of tau(k) with a BIC gain over the line, and the first-chunk knee (also
    when it has none: None)."""
    shapes = []
    if _positive(fit.breakpoint_dbic):
        text = (
            f"knee at k={fit.breakpoint_k:.0f} (slope {_ms(fit.slope_before)} -> "
            f"{_ms(fit.slope_after)} ms/chunk, p_adj={_fmt(fit.breakpoint_p)}, "
            f"effect {fit.breakpoint_effect:.1%}, VPP bubble {_pp(fit.breakpoint_bubble_pp)}, "
            f"dBIC={fit.breakpoint_dbic:.1f})"
        )
        matters = _matters(fit.breakpoint_effect, fit.breakpoint_bubble_pp, th)
        at = f"{fit.breakpoint_k:.0f}"
        shapes.append(
            _Shape(
                fit.breakpoint_dbic, fit.breakpoint_p, "knee", text, matters, at, fit.breakpoint_k
            )
        )
    if _positive(fit.jump_dbic):  # a latency table's broken line (fits._jump)
        text = (
            f"knee: a jump between k={fit.jump_from_k:.0f} and k={fit.jump_k:.0f} "
            f"(x{1 + fit.jump_rel:.2f} at k={fit.jump_k:.0f}, its own line on each side, "
            f"p_adj={_fmt(fit.jump_p)}, effect {fit.jump_effect:.1%}, VPP bubble "
            f"{_pp(fit.jump_bubble_pp)}, dBIC={fit.jump_dbic:.1f})"
        )
        matters = _matters(fit.jump_effect, fit.jump_bubble_pp, th)
        at = f"{fit.jump_from_k:.0f}->{fit.jump_k:.0f}"
        shapes.append(_Shape(fit.jump_dbic, fit.jump_p, "knee", text, matters, at, fit.jump_k))
    if _positive(fit.stair_dbic):
        text = (
            f"staircase: a step every {fit.stair_period:.0f} chunks (phase "
            f"{fit.stair_phase:.0f}, p_adj={_fmt(fit.stair_p)}, effect {fit.stair_effect:.1%}, "
            f"VPP bubble {_pp(fit.stair_bubble_pp)}, dBIC={fit.stair_dbic:.1f})"
        )
        matters = _matters(fit.stair_effect, fit.stair_bubble_pp, th)
        shapes.append(_Shape(fit.stair_dbic, fit.stair_p, "staircase", text, matters))
    if _positive(fit.curvature_dbic):
        shape = "convex" if fit.curvature > 0 else "concave"
        text = (
            f"{shape} quadratic term p={_fmt(fit.curvature_p)}, effect "
            f"{fit.curvature_effect:.1%}, VPP bubble {_pp(fit.curvature_bubble_pp)}"
        )
        matters = _matters(fit.curvature_effect, fit.curvature_bubble_pp, th)
        shapes.append(_Shape(fit.curvature_dbic, fit.curvature_p, shape, text, matters))
    first = None
    if math.isfinite(fit.first_p):
        text = (
            f"knee at k=0->1: chunk 0 x{1 + fit.first_rel:.2f} of the line through chunks 1 on "
            f"(p={_fmt(fit.first_p)}, effect {fit.first_effect:.1%}, VPP bubble "
            f"{_pp(fit.first_bubble_pp)}, dBIC={fit.first_dbic:.1f})"
        )
        matters = _matters(fit.first_effect, fit.first_bubble_pp, th)
        first = _Shape(fit.first_dbic, fit.first_p, "knee", text, matters, "0->1", 1.0)
    return shapes, first


def _scale(fit: CurveFit, th: Thresholds, n_chunks: int | None = None) -> tuple[float, str, bool]:
    """(r*, text, flattened): the a/b bound of this curve's length (N = `n_chunks`, else
    k_max + 1), the a/b evidence, and whether the whole b/a interval lies within +-1/r*."""
    n = n_chunks if n_chunks is not None else fit.k_max + 1
    bound = flat_bound(n, th.flat_gain_share)
    share = gain_share(fit.ab_ratio, n) if fit.ab_ratio >= 1 else math.nan
    kept = f", VPP keeps {share:.0%} of a proportional curve's gain" if math.isfinite(share) else ""
    text = (
        f"a/b={_fmt(fit.ab_ratio)} [{_fmt(fit.ab_lo)}, {_fmt(fit.ab_hi)}]{kept}; flattened "
        f"beyond a/b {_fmt(bound)} at N={n} (VPP keeps <= {th.flat_gain_share:.0%})"
    )
    flattened = (
        math.isfinite(bound)
        and math.isfinite(fit.ba_hi)
        and math.isfinite(fit.ba_lo)
        and -1 / bound <= fit.ba_lo
        and fit.ba_hi <= 1 / bound
    )
    return bound, text, flattened


def classify(
    fit: CurveFit, th: Thresholds = DEFAULT_THRESHOLDS, *, n_chunks: int | None = None
) -> Verdict:
    """The verdict of one fitted curve. `n_chunks`: the request's chunks N, where the measured
    chunk indices need not reach it (a latency table's gapped grid read as a request of
    seq_len tokens); k_max + 1 when not given."""
    if fit.n_k < th.min_chunks:
        return Verdict("too_short", f"{fit.n_k} chunk indices < {th.min_chunks}")
    if not math.isfinite(fit.slope):
        return Verdict("too_noisy", "the line could not be fitted")
    context = _context(fit)
    bound, scale_text, flattened = _scale(fit, th, n_chunks)
    shapes, first = _shapes(fit, th)
    significant = [c for c in shapes if c.p < th.alpha]
    if first is not None and fit.shapes_from_k == 1 and first.matters:
        later = [c for c in significant if c.matters]
        text = first.text
        at = first.knee_at
        if later:  # shapes of chunks 1 on (fits: tested without chunk 0)
            second = max(later, key=lambda c: c.dbic)
            text += f"; and on chunks 1 on: {second.text}"
            at += f", {second.knee_at}" if second.label == "knee" else ""
        bp = later and max(later, key=lambda c: c.dbic).breakpoint_k
        return Verdict("knee", f"{text}; {scale_text}{context}", bp or 1.0, at, bound)
    if first is not None and fit.shapes_from_k != 1:  # it competes with the shapes through it
        shapes.append(first)
        significant += [first] if first.p < th.alpha else []
    candidates = [c for c in significant if c.dbic > 0]
    if fit.step_p < th.alpha and fit.step_dbic > 0 and fit.step_effect >= th.min_drift_effect:
        text = (
            f"level step x{1 + fit.step_rel:.3f} from k={fit.step_k:.0f} inside the run "
            f"(p_adj={_fmt(fit.step_p)}, dBIC={fit.step_dbic:.1f}): a drift, not tau(k)"
        )
        candidates.append(_Shape(fit.step_dbic, fit.step_p, "drift", text, True))
    below, drift = "", ""
    if candidates:
        best = max(candidates, key=lambda c: c.dbic)
        if best.label == "drift":  # a disturbance: the line's own tests still decide the shape
            drift = best.text
            below = f"; {best.text}"
        elif best.matters:
            return Verdict(
                best.label,
                f"{best.text}; {scale_text}{context}",
                best.breakpoint_k,
                best.knee_at,
                bound,
            )
        else:
            below = (
                f"; {best.text} below the practical floor ({th.min_effect:.0%} of mean tau, "
                f"{th.min_bubble_pp:g} pp of VPP bubble)"
            )
    if first is not None and fit.shapes_from_k == 1 and not first.matters:
        below += f"; {first.text} below the practical floor"
    below += _not_ruled_out(fit, shapes + ([first] if first and first not in shapes else []), th)
    if flattened:
        return Verdict(
            "flattened",
            f"{scale_text}: |slope/intercept| <= {_fmt(max(fit.ba_hi, -fit.ba_lo))} "
            f"(<= 1/{_fmt(bound)}){below}{context}",
            flat_bound=bound,
        )
    halfwidth = (fit.slope_hi - fit.slope_lo) / 2
    rel = halfwidth / abs(fit.slope) if fit.slope != 0 else math.inf
    line_text = (
        f"slope {_ms(fit.slope)} ms/chunk [{_ms(fit.slope_lo)}, {_ms(fit.slope_hi)}], "
        f"R2={fit.r2:.3f}, {scale_text}"
    )
    excludes_zero = fit.slope_lo > 0 or fit.slope_hi < 0
    if drift:
        return Verdict("drift", f"{drift}; {line_text}{context}", flat_bound=bound)
    if excludes_zero and rel <= th.max_slope_rel_halfwidth and fit.r2 >= th.min_r2:
        straddle = _straddles(fit, bound, th.flat_gain_share)
        return Verdict("linear", line_text + straddle + below + context, flat_bound=bound)
    why = []
    if not excludes_zero:
        why.append("slope CI includes 0")
    if rel > th.max_slope_rel_halfwidth:
        why.append(f"slope CI half-width {_fmt(rel)} of the slope")
    if fit.r2 < th.min_r2:
        why.append(f"R2 {fit.r2:.2f} < {th.min_r2}")
    strong = [
        c
        for c in shapes + ([first] if first and first not in shapes else [])
        if c.dbic >= th.noisy_line_min_dbic and c.p < th.noisy_line_alpha and c.matters
    ]
    if strong:
        best = max(strong, key=lambda c: c.dbic)
        return Verdict(
            best.label,
            f"{best.text}; named at p < {th.noisy_line_alpha:g} with dBIC >= "
            f"{th.noisy_line_min_dbic:g} as the line fails ({'; '.join(why)}){context}",
            best.breakpoint_k,
            best.knee_at,
            bound,
        )
    return Verdict("too_noisy", f"{'; '.join(why)}: {line_text}{below}{context}", flat_bound=bound)


STRADDLES = "flattened not ruled out"
"""The evidence of a `linear` curve whose a/b interval reaches past r*(N) (_straddles)."""


def _straddles(fit: CurveFit, bound: float, share: float) -> str:
    """The evidence of a `linear` curve whose a/b interval straddles r*(N): it reaches beyond the
    bound without lying wholly beyond it, so `flattened` is not ruled out.
    The label stays `linear` (flattened needs the whole interval beyond r*, and a `linear`
    label stays what a dense kernel's wide interval gets: Vidur's A100 attention at 480-token
    chunks, a/b 2.44 [1.54, 3.99] against r* 3.92, would lose it), and the evidence says so:
    docs/tau_k.md §4 "Judged at request lengths"."""
    if not (math.isfinite(bound) and math.isfinite(fit.ba_lo)) or fit.ba_lo > 1 / bound:
        return ""
    return (
        f"; {STRADDLES}: the a/b interval reaches {_fmt(fit.ab_hi)}, beyond r*={_fmt(bound)} "
        f"(where VPP keeps <= {share:.0%} of a proportional curve's gain)"
    )


def _not_ruled_out(fit: CurveFit, shapes: list[_Shape], th: Thresholds) -> str:
    """The evidence of a shape that matters and was not significant at `alpha` but is at
    `noisy_line_alpha`: a line verdict says it could not rule the bend out (a staircase is not a
    bend: its sawtooth is named only at `alpha`). With one run the
    AR(1) noise is estimated from the line's residuals, which a bend inflates, so one run
    cannot tell a bend from serial correlation; repeats can (their pure error holds no shape)."""
    weak = [
        c
        for c in shapes
        if th.alpha <= c.p < th.noisy_line_alpha and c.matters and c.label != "staircase"
    ]
    if not weak:
        return ""
    text = max(weak, key=lambda c: c.dbic).text
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
