"""Verdicts of operator-latency table curves by kind, and issue 32's acceptance lines on them
(docs/tau_k.md §4 "Real tables"): read from the rows `tracereplay fit --json` prints (or the
stored `tau_fits`), never refitted here.

Kinds: `dense kernel` (a dense attention kernel alone: Vidur's `attention` curve), `whole layer`
(Vidur's `layer`), `sparse module` (a table row whose `attention` is sparse: aiconfigurator's
DSA / MSA modules), `other`.

    uv run tracereplay fit --json > fits.json
    uv run python -m pipelines.analysis.tau.table_verdicts fits.json
    uv run python -m pipelines.analysis.tau.table_verdicts --warehouse W --n-boot 20

`--warehouse` fits the warehouse's table curves here with `curves.fit_curves` (the function
`tracereplay fit` runs) without storing them, with fewer bootstrap draws: the verdicts do not
depend on the bootstrap (it gives the VPP bubble and gain intervals only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import polars as pl

from pipelines.analysis.tau.table_points import table_tau_points
from pipelines.analysis.tau.verdict_policy import FLAGGED_VERDICTS
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


def verdict_counts(frame: pl.DataFrame) -> pl.DataFrame:
    """Curves per kind, module, chunk size and verdict."""
    return (
        frame.group_by("kind", "module", "chunk_size", "verdict")
        .len("curves")
        .sort("kind", "module", "chunk_size", "verdict")
    )


def acceptance(frame: pl.DataFrame) -> dict[str, dict]:
    """Issue 32's acceptance lines on these curves: counts, never rounded up."""
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


def fit_table_curves(warehouse: Path, n_boot: int = 20) -> list[dict]:
    """Fit rows of every table curve of a warehouse (curves.fit_curves, not stored)."""
    from pipelines.analysis.tau.curves import fit_curves  # statsmodels: seconds to import

    with open_store(warehouse).session(read_only=True) as session:
        points = table_tau_points(session.con)
    return fit_curves(points, n_boot=n_boot).to_dicts() if not points.is_empty() else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fits", type=Path, nargs="?", help="the JSON of `tracereplay fit --json`")
    parser.add_argument("--warehouse", type=Path, help="fit this warehouse's table curves here")
    parser.add_argument("--n-boot", type=int, default=20, help="bootstrap draws (default 20)")
    args = parser.parse_args(argv)
    if (args.fits is None) == (args.warehouse is None):
        print("give either a fit JSON or --warehouse", file=sys.stderr)
        return 2
    if args.warehouse is not None:
        rows = fit_table_curves(args.warehouse, args.n_boot)
    else:
        out = json.loads(args.fits.read_text())
        rows = out["curves"] if isinstance(out, dict) else out
    frame = table_rows(rows)
    if frame.is_empty():
        print(f"{args.fits or args.warehouse}: no table curves", file=sys.stderr)
        return 2
    with pl.Config(tbl_rows=-1, tbl_width_chars=120, fmt_str_lengths=40):
        print(verdict_counts(frame))
    print(json.dumps(acceptance(frame), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
