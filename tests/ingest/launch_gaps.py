"""Per-step computing / communication / memcpy of the product's derived breakdown against the
independent launch-correlated oracles, on every real folder and public Kineto copy; the largest
relative gap per source (docs/step_breakdown.md "Launch attribution (Ascend ...)": issue 30).

Run from the repository root: `uv run python tests/ingest/launch_gaps.py` (a measurement, not a
test: the oracles are the standard-library ones of test_real_ascend_launch.py and
tests/data/real_kineto/independent_figures.py; the Ascend text ranks are read in memory and forced
onto the streamed path). Needs ../shared/traces/real and the local Kineto copies."""

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import polars as pl
from test_real_ascend_launch import (
    DB_RANKS,
    KERNEL_ONLY_RANKS,
    TEXT_RANKS,
    _derived,
    oracle_db,
    oracle_kernels,
    oracle_text,
)

from pipelines.ingest.readers import ascend_db, ascend_text, kineto, trace_view

HERE = Path(__file__).resolve().parent
R = HERE.parents[1].parent / "shared" / "traces" / "real"
KINETO = HERE.parent / "data" / "real_kineto"


def gap(a, b):
    return abs(a - b) / b if b else (0.0 if abs(a - b) <= 1000 else float("inf"))


rows = []


def report(label, ours, oracle, cols, cov):
    worst = {
        c: max((gap(ours[s][c] or 0, oracle[s][c]) for s in oracle if s in ours), default=0.0)
        for c in cols
    }
    rows.append(
        (
            label,
            len(oracle),
            sorted(ours) == sorted(oracle) or sorted(set(oracle) - set(ours)),
            worst,
            cov,
        )
    )


for name, rel in TEXT_RANKS.items():
    (t,) = sorted((R / rel).rglob("trace_view.json"))
    o = oracle_text(t)[0]
    for mode, f in (("mem", 1.6), ("stream", 1e12)):
        trace_view.IN_MEMORY_PEAK_FACTOR = f
        fr = ascend_text.read_rank(R / rel)
        streamed = isinstance(fr.tables["slices"], pl.LazyFrame)
        if mode == "stream" and not streamed:
            continue
        d = _derived(fr)
        report(
            f"{name} text {mode}",
            d,
            o,
            ("computing_ns", "communication_ns"),
            min(r["launch_coverage"] for r in d.values()),
        )
trace_view.IN_MEMORY_PEAK_FACTOR = 1.6
for name, rel in DB_RANKS.items():
    fr = ascend_db.read_rank(R / rel)
    d = _derived(fr)
    report(
        f"{name} db",
        d,
        oracle_db(ascend_db.find_db(R / rel)),
        ("computing_ns", "communication_ns"),
        min(r["launch_coverage"] for r in d.values()),
    )
for name, rel in {
    **KERNEL_ONLY_RANKS,
    "Fa": "msprof-analyze/test/ut/advisor/advisor_backend/compute_advice",
    "Fb": "msprof-analyze/test/ut/advisor/compute_advice/data",
}.items():
    folder = R / rel
    csvp = folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    if not csvp.is_file():
        csvp = folder / "kernel_details.csv"
    try:
        fr = ascend_text.read_rank(folder)
        d = _derived(fr)
        report(
            f"{name} kernel_details",
            d,
            oracle_kernels(csvp),
            ("computing_ns", "communication_ns"),
            None,
        )
    except Exception as exc:
        rows.append((f"{name} kernel_details", 0, False, {"error": repr(exc)[:80]}, None))
spec = importlib.util.spec_from_file_location("fig", str(KINETO / "independent_figures.py"))
fig = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fig)
paths = sorted(p for p in KINETO.rglob("*.json*") if not p.name.endswith("figures.json"))
paths += sorted((R / "kineto").rglob("*.json.gz"))
for p in paths:
    try:
        fr = kineto.read_trace(p)
    except Exception as exc:
        rows.append((p.name, 0, None, {"quarantined": getattr(exc, "reason", repr(exc))}, None))
        continue
    exp = fig.figures(str(p))["per_step_launch_rule"]
    if not exp:
        rows.append((p.name, 0, None, {"no ProfilerStep": "whole-trace row only"}, None))
        continue
    d = {
        (f"ProfilerStep#{r['step']}" if r["step"] is not None else "(none)"): r
        for r in fr.tables["step_breakdown"].iter_rows(named=True)
    }
    both = [
        (d[s]["communication_ns"] / 1e3, w["union_us"])
        for s, w in exp.items()
        if s in d and w["union_us"]["communication"] and w["union_us"]["p2p"]
    ]
    if both:
        ok = all(
            max(u["communication"], u["p2p"]) - 1 <= c <= u["communication"] + u["p2p"] + 1
            for c, u in both
        )
        print(
            p.name,
            "collective+p2p steps",
            len(both),
            "comm within [max, sum] of the oracle's unions:",
            ok,
        )
    o = {}
    for s, w in exp.items():
        u = w["union_us"]
        o[s] = {
            "computing_ns": u["compute"] * 1e3,
            "memcpy_ns": u["memcpy"] * 1e3,
            "communication_ns": (u["communication"] + u["p2p"]) * 1e3
            if not (u["communication"] and u["p2p"])
            else None,
        }
    cols = ["computing_ns", "memcpy_ns"] + (
        ["communication_ns"] if all(v["communication_ns"] is not None for v in o.values()) else []
    )
    report(
        str(p).split("real_kineto/")[-1].split("real/")[-1],
        d,
        o,
        cols,
        min((r["launch_coverage"] or 0) for r in d.values()) if d else None,
    )
for label, n, same, worst, cov in rows:
    w = ", ".join(
        f"{k.replace('_ns', '')} {v * 100:.4f} %" if isinstance(v, float) else f"{k}: {v}"
        for k, v in worst.items()
    )
    coverage = cov if cov is None else round(cov, 4)
    print(f"{label[:70]:70s} steps {n:2d} same-steps {same} min-cov {coverage} | {w}")
