"""The predicted-VPP-gain block `tracereplay fit` prints under its table (issue 32 item 3)."""

from __future__ import annotations

import math

import polars as pl

from pipelines.labels import tokens


def _pct(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.1%}"


def _range(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "[no interval]"
    return f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def format_gains(fits: pl.DataFrame) -> str:
    """One line per configuration: the TTFT share VPP would save with its interval, CPP's and
    VPP's bubbles, and the analytic g(a/b, N) of a straight tau_k; '' when no configuration has
    a prediction."""
    from pipelines.analysis.tau.vpp_gain import predicted_gains

    gains = predicted_gains(fits)
    if gains.is_empty():
        return ""
    lines = [
        "Predicted VPP gain (P = 2, vp = 2, free transfers, one request; 95 % intervals; "
        "docs/advise.md):"
    ]
    one_run = False
    rows = gains.to_dicts()
    wheres = [
        " ".join(
            str(v)
            for v in (
                r.get("model"),
                r.get("source"),
                r.get("schedule"),
                f"{tokens(r.get('seq_len'))}/{tokens(r.get('chunk_size'))}",
            )
            if v is not None
        )[:44]
        for r in rows
    ]
    width = max(len(w) for w in wheres)
    for r, where in zip(rows, wheres, strict=True):
        ab = r["ab_ratio"]
        ab_text = "-" if ab is None or not math.isfinite(ab) else f"{ab:.3g}"
        lines.append(
            f"  {where:<{width}} saves {_pct(r['ttft_saving'])} "
            f"{_range(r['ttft_saving_lo'], r['ttft_saving_hi'])} TTFT; bubble "
            f"{_pct(r['cpp_bubble_pred'])}->{_pct(r['vpp_bubble_pred'])}; g(a/b {ab_text}, "
            f"N {r['n_k']}) {_pct(r['analytic_saving'])} "
            f"{_range(r['analytic_saving_lo'], r['analytic_saving_hi'])}"
        )
        one_run |= "no interval" in str(r["vpp_basis"])
    lines.append(
        "  saves: from the fitted stage curves, any shape; g: a straight tau_k with this a/b "
        "(its interval assumes the line)"
    )
    if one_run:
        lines.append(
            "  [no interval]: one run cannot tell chunk-to-chunk structure from noise; pool runs"
        )
    return "\n".join(lines)
