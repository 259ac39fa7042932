"""Holistic Trace Analysis probe of the ingest benchmark, run by HTA's own interpreter (a separate
venv: HTA is not a project dependency), so this file imports only the standard library and hta.

Usage: `<hta-python> hta_probe.py TRACE_DIR`; prints `BENCH_RESULT {json}` with the wall time of
`TraceAnalysis(trace_dir=...)` (HTA's parse + per-rank load, json backend) and its CPU time,
imports excluded, and the number of events HTA kept.
"""

import json
import resource
import sys
import time

RESULT_PREFIX = "BENCH_RESULT "


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # HTA may fork parser workers
    return usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime


def main(trace_dir: str) -> int:
    from hta.trace_analysis import TraceAnalysis

    cpu = _cpu_seconds()
    start = time.perf_counter()
    analysis = TraceAnalysis(trace_dir=trace_dir)
    wall = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu
    trace = analysis.t
    kept = sum(len(trace.get_trace(rank)) for rank in trace.get_ranks())
    print(RESULT_PREFIX + json.dumps({"wall_s": wall, "cpu_s": cpu, "rows": kept}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
