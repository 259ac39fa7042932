"""The fold-back identity, measured: each window's work on rank 0 over rank 1 (no torch import).

Under VPP on two ranks with the fold-back layout rank 0 runs virtual stages 0 and 3, rank 1
stages 1 and 2. In the steady state window k rank 0 runs stage 0 of chunk k+1 and stage 3 of
chunk k-1 while rank 1 runs stages 1 and 2 of chunk k, so with equal stages and tau linear in k
(tau_{k-1} + tau_{k+1} = 2 tau_k) the two ranks do the same work and the imbalance bubble
cancels (docs/schedules.md). `window_ratios` measures that directly:

    VPP:  r_k = (t0[k+1] + t3[k-1]) / (t1[k] + t2[k]),  k = 1 .. N-2
    CPP, DCPP (one stage per rank):  r_k = t0[k+1] / t1[k],  k = 0 .. N-2

(t_s[k]: the measured time of chunk k on virtual stage s), the second being the window
imbalance that fold-back removes (CPP: 1 + slope / tau_k above 1; DCPP: chunk sizes chosen for
equal steps). `window_interval` averages r_k within each request (one pass of the engine) and
gives the mean over the requests with a t interval (the passes are seconds apart, the windows
inside one pass are not independent, so the pass is the unit).
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from pipelines.analysis.comparison.mean_interval import mean_interval


def window_ratios(chunks: pl.DataFrame, value: str = "busy_ns") -> pl.DataFrame:
    """request_id, k, ratio per window (module docstring); `chunks` needs request_id,
    chunk_idx, vstage and `value`. Empty unless the stages are 0-1 or 0-3."""
    stages = sorted(chunks["vstage"].unique().to_list())
    wide = chunks.pivot(
        on="vstage", index=["request_id", "chunk_idx"], values=value, aggregate_function="sum"
    ).rename({str(s): f"t{s}" for s in stages})
    nxt = wide.select(
        "request_id", (pl.col("chunk_idx") - 1).alias("chunk_idx"), pl.col("t0").alias("n0")
    )
    joined = wide.join(nxt, on=["request_id", "chunk_idx"], how="inner")
    if stages == [0, 1, 2, 3]:
        prev = wide.select(
            "request_id", (pl.col("chunk_idx") + 1).alias("chunk_idx"), pl.col("t3").alias("p3")
        )
        joined = joined.join(prev, on=["request_id", "chunk_idx"], how="inner")
        ratio = (pl.col("n0") + pl.col("p3")) / (pl.col("t1") + pl.col("t2"))
    elif stages == [0, 1]:
        ratio = pl.col("n0") / pl.col("t1")
    else:
        return pl.DataFrame(schema={"request_id": pl.String, "k": pl.Int32, "ratio": pl.Float64})
    return joined.select(
        "request_id", pl.col("chunk_idx").alias("k"), ratio.cast(pl.Float64).alias("ratio")
    ).sort("request_id", "k")


def window_interval(chunks: pl.DataFrame, value: str = "busy_ns") -> dict[str, Any] | None:
    """Mean window ratio with its 95 % t interval over the requests (passes): kind
    ("fold_back" for 4 virtual stages, "one_stage" for 2), mean, low, high, n requests,
    n windows, per_request (each request's mean ratio); None without a window."""
    ratios = window_ratios(chunks, value)
    if ratios.is_empty():
        return None
    means = ratios.group_by("request_id").agg(pl.col("ratio").mean()).sort("request_id")
    per_request = [float(v) for v in means["ratio"]]
    mean, low, high = mean_interval(per_request)
    four = chunks["vstage"].n_unique() == 4
    return {
        "kind": "fold_back" if four else "one_stage",
        "mean": mean,
        "low": None if math.isnan(low) else low,
        "high": None if math.isnan(high) else high,
        "n_requests": len(per_request),
        "n_windows": ratios.height,
        "per_request": per_request,
        "test": "t interval over the requests' mean window ratios",
    }
