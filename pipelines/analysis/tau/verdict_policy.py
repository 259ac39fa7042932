"""What the verdicts mean for a campaign: which flag a curve, which decide nothing, and which
curves are expected to be linear. One policy for the demo's self-check, the Dagster checks and the
`tracereplay fit` summary.

* Flagged (tau_k is not (k+1)t-like): the shapes `knee` (a break at a stated k, k = 0->1
  included), `staircase`, `convex`, `concave`, and the scale `flattened` (a straight curve whose
  a/b is so large that VPP keeps at most 73 % of a proportional curve's gain: what DSA's top-k
  attention and a whole layer at small chunks do). Every flag already carries both a
  significance and a practical magnitude (classify, pipelines.analysis.tau.verdicts): a shape
  needs p < alpha *and* a practical size, a departure from the line of at least
  `Thresholds.min_effect` (5 % of the mean tau) or a change of the predicted VPP bubble of at
  least `Thresholds.min_bubble_pp` (0.5 pp); `flattened` needs the whole slope/intercept
  interval inside +-1/r*(N) (pipelines.analysis.tau.flattening). `flag_magnitude` states that
  magnitude. The names of earlier tables, `kinked` and `linear_offset`, count as `knee` and
  `flattened`.
* Fitted by another law: `cost_model`, a variable-chunk (DCPP) curve fitted by tau(c, p)
  (pipelines.analysis.tau.cost_law): never judged against k, never flagged.
* Disturbance: `drift` (a level step inside the run, a throttle or clock change: not a shape of
  tau(k)); it neither flags a curve nor offends the dense expectation.
* Inconclusive: `too_noisy`, `too_short`: listed, never counted for or against an expectation.
* A latency table's curve judged at several request lengths (docs/tau_k.md §4) counts once: as
  flagged when it is flagged at some length, else by its verdict at its whole range.
* Expected shape, from the run fact `attention` (runs.attention: simulator preset, the
  `attention` key of profiler_metadata.json, or `--tag attention=...`), never from model names:
  `dense` attention -> `linear` (a flag fails the expectation); `sparse` -> flagged (a `linear`
  curve fails it). Curves whose runs name no attention are not covered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import polars as pl

from pipelines import schedule_kinds
from pipelines.analysis.tau.curve_keys import CURVE_KEYS
from pipelines.analysis.tau.verdicts import LEGACY_VERDICTS, SHAPE_VERDICTS, canonical_verdict

FLAGGED_VERDICTS = (*SHAPE_VERDICTS, "flattened", *LEGACY_VERDICTS)
DISTURBANCE_VERDICTS = ("drift",)
INCONCLUSIVE_VERDICTS = ("too_noisy", "too_short")
OTHER_LAW_VERDICTS = ("cost_model",)
SHOWN = (
    "model",
    "attention",
    "schedule",
    "chunk_size",
    "seq_len",
    "vstage",
    "n_runs",
    "verdict",
    "magnitude",
)


@dataclass(frozen=True)
class Expectation:
    """Curves of runs with this `attention` should be `linear` or flagged."""

    name: str
    attention: str
    wants: Literal["linear", "flagged"]

    def offends(self) -> pl.Expr:
        """Whether a (covered) curve contradicts the expectation."""
        if self.wants == "linear":
            return pl.col("verdict").is_in(FLAGGED_VERDICTS)
        return pl.col("verdict") == "linear"


DENSE_LINEAR = Expectation("dense_models_linear", "dense", "linear")
SPARSE_FLAGGED = Expectation("dsa_models_flagged", "sparse", "flagged")
EXPECTATIONS = (DENSE_LINEAR, SPARSE_FLAGGED)


def flag_magnitude(row: dict) -> str:
    """The practical size behind a curve's verdict, as text ('' for unflagged curves)."""
    verdict = canonical_verdict(row.get("verdict"))
    knee_at = row.get("knee_at") or ""
    effect = {
        "knee": "first_effect"
        if knee_at.startswith("0->1")
        else "jump_effect"  # a latency table's jump between two measured indices
        if "->" in knee_at
        else "breakpoint_effect",
        "staircase": "stair_effect",
        "convex": "curvature_effect",
    }.get("convex" if verdict == "concave" else str(verdict))
    if verdict == "knee" and row.get(effect) is None:  # a stored table without the column
        effect = "breakpoint_effect"
    if effect is not None and row.get(effect) is not None:
        bubble = row.get(effect.replace("_effect", "_bubble_pp"))
        known = bubble is not None and math.isfinite(bubble)
        shift = f", VPP bubble {bubble:+.2f} pp" if known else ""
        return f"departure {row[effect]:.1%} of mean tau{shift}"
    if verdict == "drift" and row.get("step_rel") is not None:
        return f"level step x{1 + row['step_rel']:.3f} from k={row['step_k']:.0f} (not tau(k))"
    if verdict == "flattened":
        hi, lo = row.get("ba_hi"), row.get("ba_lo")
        if hi is not None and lo is not None and math.isfinite(hi) and math.isfinite(lo):
            bound = row.get("ab_flat_bound")
            beyond = f" (a/b > {bound:.3g})" if bound is not None and math.isfinite(bound) else ""
            return f"|slope/intercept| <= {max(hi, -lo):.3g}{beyond}"
    return ""


@dataclass(frozen=True)
class ExpectationResult:
    """One expectation over a fit table: the curves it covers, those that contradict it and
    those whose verdict decides nothing."""

    expectation: Expectation
    covered: pl.DataFrame
    offending: pl.DataFrame
    inconclusive: pl.DataFrame

    @property
    def passed(self) -> bool:
        return self.offending.is_empty()

    @property
    def decided(self) -> int:
        return self.covered.height - self.inconclusive.height

    def description(self) -> str:
        e = self.expectation
        if self.covered.is_empty():
            return f"no curves of runs with {e.attention} attention: nothing to check"
        wants = "linear" if e.wants == "linear" else "flagged (not linear)"
        return (
            f"{e.attention} attention, expected {wants}: {self.offending.height} of "
            f"{self.covered.height} curves contradict it, {self.inconclusive.height} inconclusive"
        )


def _shown(frame: pl.DataFrame) -> pl.DataFrame:
    magnitude = pl.Series("magnitude", [flag_magnitude(r) for r in frame.to_dicts()], pl.String)
    frame = frame.with_columns(magnitude)
    return frame.select(c for c in SHOWN if c in frame.columns)


# DCPP sizes each chunk from the prefix it follows (chunks shrink as the prefix grows), so its
# tau_k is not a fixed-size chunk's and has no linear expectation (in the full demo the dense
# models' dcpp curves were judged `convex` by 10-12 % of mean tau). The expectations cover the
# fixed-chunk schedules only; dcpp curves are still fitted and shown (docs/demo.md).
VARIABLE_CHUNK_SCHEDULES = schedule_kinds.VARIABLE_CHUNKS


def one_row_per_table_curve(fits: pl.DataFrame) -> pl.DataFrame:
    """A latency table's curve judged at several request lengths (seq_len; docs/tau_k.md §4
    "Judged at request lengths") as one row: its row at the shortest length where it is flagged,
    else its row at its whole range (the longest). A curve is flagged when it is flagged at some
    length a user runs. Run curves (no `operator`) are unchanged."""
    if "operator" not in fits.columns or "seq_len" not in fits.columns or fits.is_empty():
        return fits
    table = pl.col("operator").is_not_null()
    curve = [c for c in CURVE_KEYS if c in fits.columns and c != "seq_len"]
    flagged = pl.col("verdict").is_in(FLAGGED_VERDICTS)
    order = pl.when(flagged).then(pl.col("seq_len")).otherwise(-pl.col("seq_len"))
    tables = (
        fits.filter(table)
        .with_columns((~flagged).alias("_unflagged"), order.alias("_order"))
        .sort("_unflagged", "_order")
        .unique(subset=curve, keep="first", maintain_order=True)
        .drop("_unflagged", "_order")
    )
    return pl.concat([fits.filter(~table), tables], how="vertical_relaxed")


def check_expectation(fits: pl.DataFrame, expectation: Expectation) -> ExpectationResult:
    """Apply one expectation to a fit table (fit_curves / the stored `tau_fits`), over the
    curves of fixed-chunk schedules; a latency table's curve once over the request lengths it
    was judged at (one_row_per_table_curve)."""
    fits = one_row_per_table_curve(fits)
    if "schedule" in fits.columns:
        fits = fits.filter(
            pl.col("schedule").is_null() | ~pl.col("schedule").is_in(list(VARIABLE_CHUNK_SCHEDULES))
        )
    if "attention" in fits.columns:
        covered = fits.filter(pl.col("attention") == expectation.attention)
    else:
        covered = fits.clear()
    inconclusive = covered.filter(pl.col("verdict").is_in(INCONCLUSIVE_VERDICTS))
    offending = covered.filter(expectation.offends())
    return ExpectationResult(expectation, _shown(covered), _shown(offending), _shown(inconclusive))


def check_fits(fits: pl.DataFrame) -> list[ExpectationResult]:
    """Every expectation of the policy over a fit table."""
    return [check_expectation(fits, e) for e in EXPECTATIONS]
