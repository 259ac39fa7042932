"""The table `tracereplay bench fidelity` prints (pipelines/bench/fidelity.py computes the
claims; the terminal rendering stays in the command line's layer)."""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.bench.fidelity import Claim
from pipelines.cli._format import render_table


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    if unit == "%":
        return f"{100 * value:+.2f}%"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:.2f} s"


def format_claims(claims: Sequence[Claim], variant: str = "calibrated") -> str:
    """The claims as a table: paper figure, model figure, error, met or MISSED, the rule; a
    model variant other than the calibrated one is named in the title."""
    rows = [
        (
            c.section,
            c.claim if not c.model_text else f"{c.claim} ({c.model_text})",
            _fmt(c.paper, c.unit),
            _fmt(c.model, c.unit),
            c.error,
            "met" if c.met else "MISSED",
            c.rule,
        )
        for c in claims
    ]
    met = sum(c.met for c in claims)
    table = render_table(
        ("section", "claim", "paper", "model", "error", "verdict", "rule"),
        rows,
        right=(2, 3, 4),
        title="VPP paper (arXiv 2608.26523) against the calibrated presets"
        + ("" if variant == "calibrated" else f", variant {variant} (docs/fidelity.md §5)"),
    )
    return f"{table}\n{met} of {len(claims)} claims met (calibration rows count as met)."
