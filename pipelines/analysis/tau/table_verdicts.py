"""Verdicts of operator-latency table curves by kind, and issue 32's acceptance lines on them
(docs/tau_k.md §4 "Real tables"): read from the rows `tracereplay fit --json` prints (or the
stored `tau_fits`), never refitted here.

Kinds: `dense kernel` (a dense attention kernel alone: Vidur's `attention` curve), `whole layer`
(Vidur's `layer`), `sparse module` (a table row whose `attention` is sparse: aiconfigurator's
DSA / MSA modules), `other`.

    uv run tracereplay fit --json > fits.json
    uv run python -m pipelines.analysis.tau.table_verdicts fits.json
    uv run python -m pipelines.analysis.tau.table_verdicts --warehouse W --n-boot 20
    uv run python -m pipelines.analysis.tau.table_verdicts --warehouse W --context 128K

`--warehouse` fits the warehouse's table curves here with `curves.fit_curves` (the function
`tracereplay fit` runs) without storing them, with fewer bootstrap draws: the verdicts do not
depend on the bootstrap (it gives the VPP bubble and gain intervals only). A table curve is
judged at its whole range and at each request length of `--context` shorter than it
(table_points.at_contexts; default 64K,128K,256K,512K, `--context none` for the whole range
only, as before 2026-12-05); it is flagged when it is flagged at any of them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import polars as pl

from pipelines.analysis.tau.table_points import (
    DEFAULT_CONTEXTS,
    at_contexts,
    parse_contexts,
    table_tau_points,
)
from pipelines.analysis.tau.verdict_policy import FLAGGED_VERDICTS
from pipelines.analysis.tau.verdicts import STRADDLES
from pipelines.store import open_store

DENSE_KERNEL, LAYER, SPARSE, OTHER = "dense kernel", "whole layer", "sparse module", "other"
INCONCLUSIVE = ("too_short", "too_noisy")


def table_rows(rows: list[dict]) -> pl.DataFrame:
    """The fit rows of table curves (those with an `operator`), with their `kind`."""
    frame = pl.DataFrame([r for r in rows if r.get("operator")], infer_schema_length=None)
    if frame.is_empty():
        return frame
    attention = pl.col("attention").fill_null("")
    kind = (
        pl.when(pl.col("operator") == "layer")
        .then(pl.lit(LAYER))
        .when(attention == "sparse")
        .then(pl.lit(SPARSE))
        .when((pl.col("operator") == "attention") & (attention == "dense"))
        .then(pl.lit(DENSE_KERNEL))
        .otherwise(pl.lit(OTHER))
    )
    module = pl.col("operator").str.split(" ").list.first()
    return frame.with_columns(kind.alias("kind"), module.alias("module"))


CURVE = ("source", "model", "chunk_size", "tp", "hardware", "attention", "operator", "vstage")
"""A table curve whatever the request length it is read at (seq_len)."""


def by_curve(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per table curve over the request lengths it was judged at: `verdict` the flag
    at the whole range (longest seq_len), `verdicts` 'seq_len:verdict' at each length, and
    `flagged_at_any` (a flagged verdict at some length) with `flagged_at` the shortest such
    length, and `straddles_at_any` (`linear` at some length with `flattened` not ruled out:
    verdicts._straddles)."""
    keys = [c for c in CURVE if c in frame.columns]
    flagged = pl.col("verdict").is_in(FLAGGED_VERDICTS)
    evidence = pl.col("evidence") if "evidence" in frame.columns else pl.lit("")
    straddles = (pl.col("verdict") == "linear") & evidence.fill_null("").str.contains(STRADDLES)
    label = pl.format("{}:{}", pl.col("seq_len"), pl.col("verdict"))
    knee = pl.col("knee_at") if "knee_at" in frame.columns else pl.lit(None, pl.String)
    return (
        frame.sort("seq_len")
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col("kind").first(),
            pl.col("module").first(),
            pl.col("verdict").last(),
            knee.last().alias("knee_at"),
            pl.col("seq_len").max().alias("whole_range"),
            label.alias("verdicts"),
            flagged.any().alias("flagged_at_any"),
            pl.col("seq_len").filter(flagged).min().alias("flagged_at"),
            straddles.any().alias("straddles_at_any"),
        )
    )


def verdict_counts(frame: pl.DataFrame) -> pl.DataFrame:
    """Curves per kind, module, chunk size and verdict."""
    return (
        frame.group_by("kind", "module", "chunk_size", "verdict")
        .len("curves")
        .sort("kind", "module", "chunk_size", "verdict")
    )


def whole_range(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows of each table curve at its whole range (its longest seq_len): the verdicts as
    they were before request lengths (all rows when the frame has no seq_len)."""
    if "seq_len" not in frame.columns:
        return frame
    keys = [c for c in CURVE if c in frame.columns]
    return frame.filter(pl.col("seq_len") == pl.col("seq_len").max().over(keys))


def flags_by_chunk(frame: pl.DataFrame) -> pl.DataFrame:
    """Per kind, module and chunk size: table curves, those flagged at their whole range and
    those flagged at some request length."""
    curves = by_curve(frame)
    flagged_whole = pl.col("verdict").is_in(FLAGGED_VERDICTS)
    return (
        curves.group_by("kind", "module", "chunk_size")
        .agg(
            pl.len().alias("curves"),
            flagged_whole.sum().alias("flagged_whole_range"),
            pl.col("flagged_at_any").sum().alias("flagged_at_any_length"),
        )
        .sort("kind", "module", "chunk_size")
    )


def acceptance(frame: pl.DataFrame) -> dict[str, dict]:
    """Issue 32's acceptance lines on these curves: counts, never rounded up. A curve judged at
    several request lengths is counted once, by its verdict at its whole range, and the sparse
    line also by whether it is flagged at any length (by_curve)."""
    curves = by_curve(frame) if "seq_len" in frame.columns else frame
    sparse_curves = curves.filter(pl.col("kind") == SPARSE)
    result = _acceptance_at_whole_range(whole_range(frame))
    if "flagged_at_any" in sparse_curves.columns:
        decided = sparse_curves.filter(
            pl.col("flagged_at_any") | ~pl.col("verdict").is_in(INCONCLUSIVE)
        )
        missed = decided.filter(~pl.col("flagged_at_any"))
        result["sparse module curves flagged at some request length"] = {
            "flagged": decided.filter(pl.col("flagged_at_any")).height,
            "decided": decided.height,
            "not_flagged_flattened_not_ruled_out": missed.filter(pl.col("straddles_at_any")).height,
            "not_flagged": sorted(missed["verdicts"].list.join(" ").to_list()),
        }
    return result


def _acceptance_at_whole_range(frame: pl.DataFrame) -> dict[str, dict]:
    fitted = frame.filter(~pl.col("verdict").is_in(INCONCLUSIVE))
    dense = fitted.filter((pl.col("kind") == DENSE_KERNEL) & (pl.col("chunk_size") >= 512))
    small = fitted.filter((pl.col("kind") == DENSE_KERNEL) & (pl.col("chunk_size") <= 128))
    sparse_all = frame.filter(pl.col("kind") == SPARSE)
    sparse = fitted.filter(pl.col("kind") == SPARSE)
    flagged = sparse.filter(pl.col("verdict").is_in(FLAGGED_VERDICTS))
    msa = fitted.filter((pl.col("kind") == SPARSE) & (pl.col("module") == "msa_context_module"))
    return {
        "dense kernel c >= 512 linear": {
            "linear": dense.filter(pl.col("verdict") == "linear").height,
            "fitted": dense.height,
        },
        "dense kernel c <= 128 knees": {
            "knee_at": sorted(
                small.filter(pl.col("verdict") == "knee")["knee_at"].to_list(), key=str
            ),
            "other": sorted(small.filter(pl.col("verdict") != "knee")["verdict"].to_list()),
        },
        "sparse module curves flagged": {
            "flagged": flagged.height,
            "fitted": sparse.height,
            "too_short_or_noisy": sparse_all.height - sparse.height,
            "not_flagged": sorted(
                sparse.filter(~pl.col("verdict").is_in(FLAGGED_VERDICTS))["verdict"].to_list()
            ),
        },
        "msa knees": {
            "knee": msa.filter(pl.col("verdict") == "knee").height,
            "fitted": msa.height,
        },
    }


def fit_table_curves(
    warehouse: Path, n_boot: int = 20, contexts: tuple[int, ...] = DEFAULT_CONTEXTS
) -> list[dict]:
    """Fit rows of every table curve of a warehouse (curves.fit_curves, not stored), at its whole
    range and at each request length of `contexts` shorter than it."""
    from pipelines.analysis.tau.curves import fit_curves  # statsmodels: seconds to import

    with open_store(warehouse).session(read_only=True) as session:
        points = at_contexts(table_tau_points(session.con), contexts)
    if points.is_empty():
        return []
    return fit_curves(points, n_boot=n_boot, progress=_progress).to_dicts()


def _progress(done: int, total: int) -> None:
    if done % 500 == 0 or done == total:
        print(f"fitted {done:,} of {total:,} curves", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fits", type=Path, nargs="?", help="the JSON of `tracereplay fit --json`")
    parser.add_argument("--warehouse", type=Path, help="fit this warehouse's table curves here")
    parser.add_argument("--n-boot", type=int, default=20, help="bootstrap draws (default 20)")
    parser.add_argument(
        "--context",
        default="64K,128K,256K,512K",
        help="request lengths a table curve is also judged at (with --warehouse; default "
        "64K,128K,256K,512K; 'none': its whole range only)",
    )
    args = parser.parse_args(argv)
    if (args.fits is None) == (args.warehouse is None):
        print("give either a fit JSON or --warehouse", file=sys.stderr)
        return 2
    try:
        contexts = parse_contexts(args.context)
    except ValueError as error:
        print(f"--context: {error}", file=sys.stderr)
        return 2
    if args.warehouse is not None:
        rows = fit_table_curves(args.warehouse, args.n_boot, contexts)
    else:
        out = json.loads(args.fits.read_text())
        rows = out["curves"] if isinstance(out, dict) else out
    frame = table_rows(rows)
    if frame.is_empty():
        print(f"{args.fits or args.warehouse}: no table curves", file=sys.stderr)
        return 2
    with pl.Config(tbl_rows=-1, tbl_width_chars=120, fmt_str_lengths=40):
        print(verdict_counts(whole_range(frame)))
        if "seq_len" in frame.columns:
            print(flags_by_chunk(frame))
    print(json.dumps(acceptance(frame), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
