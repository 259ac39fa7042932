"""Independent figures of `tracereplay show` / `runs` from the raw real exports.

Standalone oracle: standard library only (json, gzip, csv, sqlite3, decimal), imports nothing
from ``pipelines``. Times are read as decimal text and turned into integer ns; a µs cell with
more than 3 decimals (set D's kernel_details.csv writes 4: `5.7985`) is rounded to the nearest ns,
ties away from zero (as the product's CSV reader rounds them: docs/ingest_rules.md).

Per rank folder (torch_npu text export, SQLite export) or Kineto trace file it gives:

* ``kernels``: per compute-kernel name [count, total ns, longest ns] (``trace_kernels``: the
  same of trace_view.json's ``Ascend Hardware`` tasks, for a run without kernel rows). Text export:
  kernel_details.csv rows (a line repeating an earlier line exactly counted once) whose Type is
  not HCCL / COMMUNICATION and whose name does not start with ``hcom_``. SQLite: TASK rows with
  a COMPUTE_TASK_INFO row. Kineto: ``X`` events of cat kernel / gpu_memcpy / gpu_memset
  (case-blind) classified compute by tests/data/real_kineto/independent_figures.classify.
* ``comm``: (op name, dur ns) of each communication op. Text export: the ``hcom_*`` slices of
  the HCCL process's ``Group * Communication`` threads in trace_view.json, else the
  kernel_details communication rows, one per op name. SQLite: COMMUNICATION_OP. Kineto: the
  communication kernels.
* ``waits``: op name (``@group`` hash cut off) -> Wait Time (ns) from communication.json /
  analysis.db CommAnalyzerTime; an op only there is an op too, with its Elapse Time.
* ``span``: (first start, last end) over the trace's complete events (Kineto: all but the
  whole-capture ``Trace`` span), else over kernel_details rows; SQLite: TASK, CANN_API,
  COMMUNICATION_OP and PYTORCH_API.
* ``step_trace``: step_trace_time.csv / StepTraceTime rows in ns.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import sqlite3
import sys
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data" / "real_kineto"))
from independent_figures import DEVICE_CATS, classify

csv.field_size_limit(1 << 30)

STEP_COLUMNS = {
    "computing_ns": "Computing",
    "comm_not_overlapped_ns": "Communication(Not Overlapped)",
    "overlapped_ns": "Overlapped",
    "free_ns": "Free",
    "stage_ns": "Stage",
    "recv_wait_ns": "Bubble",
}
DB_STEP_COLUMNS = {  # analysis.db StepTraceTime
    "computing_ns": "computing",
    "comm_not_overlapped_ns": "communication_not_overlapped",
    "overlapped_ns": "overlapped",
    "free_ns": "free",
    "stage_ns": "stage",
    "recv_wait_ns": "bubble",
}


def ns(text, scale: int = 1000) -> int:
    """Decimal µs (or, with scale 1e6, ms) text -> integer ns, ties away from zero."""
    return int((Decimal(str(text).strip()) * scale).to_integral_value(ROUND_HALF_UP))


def op_name(name: str) -> str:
    """`hcom_allReduce__586_0_1` -> `hcom_allReduce`; a Kineto kernel without `void ` and its
    argument list."""
    m = re.match(r"^(hcom_[A-Za-z0-9]+)__", name)
    if m:
        return m.group(1)
    return re.sub(r"\((?:[^()]|\([^()]*\))*\)$", "", re.sub(r"^void ", "", name))


def _rank_figures() -> dict:
    return {
        "kernels": {},
        "trace_kernels": {},
        "comm": [],
        "waits": {},
        "elapse": {},
        "span": None,
        "step_trace": [],
    }


def _add_kernel(kernels: dict, name: str, dur: int) -> None:
    k = kernels.setdefault(name, [0, 0, 0])
    k[0] += 1
    k[1] += dur
    k[2] = max(k[2], dur)


def _widen(span, start: int, end: int):
    return (start, end) if span is None else (min(span[0], start), max(span[1], end))


def text_rank(folder: Path) -> dict:
    """One torch_npu text rank folder (`*_ascend_pt`, or one holding its files)."""
    out_dir = folder / "ASCEND_PROFILER_OUTPUT"
    base = out_dir if out_dir.is_dir() else folder
    fig = _rank_figures()
    trace = base / "trace_view.json"
    if trace.is_file():
        data = json.loads(trace.read_text(), parse_float=Decimal)
        events = data["traceEvents"] if isinstance(data, dict) else data
        process, thread = {}, {}
        for e in events:
            if e.get("ph") == "M" and e.get("name") == "process_name":
                process[e.get("pid")] = e["args"]["name"]
            elif e.get("ph") == "M" and e.get("name") == "thread_name":
                thread[(e.get("pid"), e.get("tid"))] = e["args"]["name"]
        for e in events:
            if e.get("ph") != "X":
                continue
            start = ns(e["ts"])
            dur = ns(e["dur"])
            fig["span"] = _widen(fig["span"], start, start + dur)
            lane = thread.get((e.get("pid"), e.get("tid")), "")
            if process.get(e.get("pid")) == "Ascend Hardware":
                _add_kernel(fig["trace_kernels"], e["name"], dur)
            if (
                process.get(e.get("pid")) == "HCCL"
                and re.match(r"^Group .* Communication$", lane)
                and e["name"].lower().startswith("hcom_")
            ):
                fig["comm"].append((e["name"], dur))
    details = base / "kernel_details.csv"
    comm_rows = []
    if details.is_file():
        with details.open(newline="") as f:
            rows = list(csv.reader(f))
        head = [h.strip() for h in rows[0]]
        seen = set()
        for raw in rows[1:]:
            if not any(c.strip() for c in raw) or tuple(raw) in seen:
                continue
            seen.add(tuple(raw))
            r = dict(zip(head, raw, strict=False))
            name = r["Name"].strip()
            start, dur = ns(r["Start Time(us)"]), ns(r["Duration(us)"])
            if not trace.is_file():
                fig["span"] = _widen(fig["span"], start, start + dur)
            if r["Type"].strip().upper() in ("HCCL", "COMMUNICATION") or name.lower().startswith(
                "hcom_"
            ):
                comm_rows.append((name, dur))
            else:
                _add_kernel(fig["kernels"], name, dur)
    if not fig["comm"]:
        fig["comm"] = comm_rows
    summary = base / "communication.json"
    if summary.is_file():
        for kinds in json.loads(summary.read_text(), parse_float=Decimal).values():
            for ops in kinds.values():
                for key, info in ops.items():
                    if key == "Total Op Info":
                        continue
                    times = info.get("Communication Time Info", {})
                    op = key.split("@")[0]
                    fig["waits"].setdefault(op, ns(times.get("Wait Time(ms)") or 0, 1_000_000))
                    fig["elapse"].setdefault(op, ns(times.get("Elapse Time(ms)"), 1_000_000))
    steps = base / "step_trace_time.csv"
    if steps.is_file():
        with steps.open(newline="") as f:
            for r in csv.DictReader(f):
                row = {k: ns(r[v]) for k, v in STEP_COLUMNS.items()}
                fig["step_trace"].append(dict(row, step=int(r["Step"])))
    return fig


def db_rank(path: Path) -> dict:
    """One torch_npu SQLite export: its `ascend_pytorch_profiler_N.db` (analysis.db beside it)."""
    db, out_dir = path, path.parent
    fig = _rank_figures()
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        names = dict(con.execute("select id, value from STRING_IDS"))
        for name, start, end in con.execute(
            "select i.name, t.startNs, t.endNs from TASK t"
            " join COMPUTE_TASK_INFO i on i.globalTaskId = t.globalTaskId"
        ):
            _add_kernel(fig["kernels"], names[name], end - start)
        for name, start, end in con.execute("select opName, startNs, endNs from COMMUNICATION_OP"):
            fig["comm"].append((names[name], end - start))
        for table in ("TASK", "CANN_API", "COMMUNICATION_OP", "PYTORCH_API"):
            lo, hi = con.execute(
                f"select min(cast(startNs as integer)), max(cast(endNs as integer)) from {table}"
            ).fetchone()
            fig["span"] = _widen(fig["span"], lo, hi)
    with sqlite3.connect(f"file:{out_dir / 'analysis.db'}?mode=ro", uri=True) as con:
        for op, wait in con.execute("select hccl_op_name, wait_time from CommAnalyzerTime"):
            fig["waits"].setdefault(op.split("@")[0], ns(wait, 1_000_000))
        cur = con.execute("select * from StepTraceTime")
        columns = [d[0] for d in cur.description]
        for values in cur.fetchall():
            r = dict(zip(columns, values, strict=True))
            row = {k: ns(r[v]) for k, v in DB_STEP_COLUMNS.items()}
            fig["step_trace"].append(dict(row, step=int(r["step"])))
    return fig


def kineto_file(path: Path) -> dict:
    """One Kineto trace (.json or .json.gz)."""
    raw = path.read_bytes()
    data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw, parse_float=Decimal)
    events = data["traceEvents"] if isinstance(data, dict) else data
    fig = _rank_figures()
    for e in events:
        if e.get("ph") != "X" or e.get("cat") == "Trace":
            continue
        start, dur = ns(e["ts"]), ns(e.get("dur", 0))
        fig["span"] = _widen(fig["span"], start, start + dur)
        if str(e.get("cat", "")).lower() not in DEVICE_CATS:
            continue
        klass = classify(e["cat"], e["name"])
        if klass == "compute":
            _add_kernel(fig["kernels"], e["name"], dur)
        elif klass in ("communication", "p2p"):
            fig["comm"].append((e["name"], dur))
    return fig


def run_totals(ranks: dict[int, dict]) -> dict:
    """Per run: kernels {name: [count, total, max, ranks]}, comm {op: [count, total, wait,
    ranks]} (ops named by op_name; wait None where no summary gives one), span length."""
    kernels: dict = {}
    comm: dict = defaultdict(lambda: [0, 0, None, set()])
    span = None
    # kernel rows where the run has any (kernel_details, db tasks, Kineto kernels), else the
    # trace's device tasks (`Ascend Hardware` lanes) of a trace_view.json without kernel_details
    source = "kernels" if any(f["kernels"] for f in ranks.values()) else "trace_kernels"
    for rank, fig in ranks.items():
        for name, (count, total, longest) in fig[source].items():
            k = kernels.setdefault(name, [0, 0, 0, set()])
            k[0] += count
            k[1] += total
            k[2] = max(k[2], longest)
            k[3].add(rank)
        seen = set()
        for name, dur in fig["comm"]:
            if name in seen and name.startswith("hcom_"):  # an HCCL op is one op per name
                continue
            seen.add(name)
            c = comm[op_name(name)]
            c[0] += 1
            c[1] += dur
            if name in fig["waits"]:
                c[2] = (c[2] or 0) + fig["waits"][name]
            c[3].add(rank)
        for name, wait in fig["waits"].items():
            if name not in seen:
                c = comm[op_name(name)]
                c[0] += 1
                c[1] += fig["elapse"][name]
                c[2] = (c[2] or 0) + wait
                c[3].add(rank)
        if fig["span"] is not None:
            span = _widen(span, *fig["span"])
    return {
        "kernels": {n: [c, t, m, len(r)] for n, (c, t, m, r) in kernels.items()},
        "comm": {n: [c, t, w, len(r)] for n, (c, t, w, r) in comm.items()},
        "makespan": None if span is None else span[1] - span[0],
    }


def cluster_rows(path: Path) -> dict[int, dict]:
    """cluster_step_trace_time.csv's `rank` rows: global rank -> the STEP_COLUMNS in ns."""
    with path.open(newline="") as f:
        return {
            int(r["Index"]): {k: ns(r[v]) for k, v in STEP_COLUMNS.items()}
            for r in csv.DictReader(f)
            if r["Type"] == "rank"
        }
