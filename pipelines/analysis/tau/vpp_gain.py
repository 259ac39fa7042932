"""Predicted VPP gain per configuration, from the fit table (issue 32 item 3).

One row per configuration (the fit table's rows without the virtual stage): VPP's bubble and its
gain over CPP as the fitted stage curves imply them (pipelines.analysis.tau.bubble_pred: exact
identities, P = 2, vp = 2, free transfers, one request; interval from the runs' pure error, none
from one run), the TTFT share VPP would save (`ttft_saving` = gain / (1 - VPP bubble), its range
over the two intervals) and the analytic g(a/b, N) of a straight tau_k with the curve's a/b
(`analytic_saving`, its interval mapped from a/b's Fieller interval)."""

from __future__ import annotations

import polars as pl

from pipelines.analysis.tau.bubble_pred import (
    analytic_bubbles,
    analytic_saving_interval,
    ttft_saving,
    ttft_saving_interval,
)
from pipelines.analysis.tau.curve_keys import CURVE_KEYS

GAIN_COLUMNS = (
    "n_k",
    "vpp_bubble_pred",
    "vpp_bubble_lo",
    "vpp_bubble_hi",
    "cpp_bubble_pred",
    "ttft_saving",
    "ttft_saving_lo",
    "ttft_saving_hi",
    "analytic_saving",
    "analytic_saving_lo",
    "analytic_saving_hi",
    "ab_ratio",
    "vpp_basis",
)


def predicted_gains(fits: pl.DataFrame) -> pl.DataFrame:
    """One row per configuration of `fits` (fit_curves' table) with a VPP prediction: its keys
    and GAIN_COLUMNS. Configurations whose stages give no prediction (DCPP, a stage count that
    is not one pipeline) are left out."""
    if fits.is_empty() or "vpp_bubble_pred" not in fits.columns:
        return pl.DataFrame()
    keys = [k for k in CURVE_KEYS if k in fits.columns and k != "vstage"]
    first = fits.filter(pl.col("vpp_bubble_pred").is_not_nan())
    if keys:
        first = first.group_by(keys, maintain_order=True).first()
    rows = []
    for row in first.to_dicts():
        vpp, gain = row["vpp_bubble_pred"], row["vpp_gain_pred"]
        s_lo, s_hi = ttft_saving_interval(
            row["vpp_bubble_lo"], row["vpp_bubble_hi"], row["vpp_gain_lo"], row["vpp_gain_hi"]
        )
        n = int(row["n_k"])
        a_lo, a_hi = analytic_saving_interval(row["ab_lo"], row["ab_hi"], n)
        rows.append(
            {
                **{k: row[k] for k in keys},
                "n_k": n,
                "vpp_bubble_pred": vpp,
                "vpp_bubble_lo": row["vpp_bubble_lo"],
                "vpp_bubble_hi": row["vpp_bubble_hi"],
                "cpp_bubble_pred": vpp + gain,
                "ttft_saving": ttft_saving(vpp, gain),
                "ttft_saving_lo": s_lo,
                "ttft_saving_hi": s_hi,
                "analytic_saving": analytic_bubbles(max(row["ab_ratio"], 0.0), n)["ttft_saving"]
                if row["ab_ratio"] == row["ab_ratio"]
                else float("nan"),
                "analytic_saving_lo": a_lo,
                "analytic_saving_hi": a_hi,
                "ab_ratio": row["ab_ratio"],
                "vpp_basis": row["vpp_basis"],
            }
        )
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()
