"""Plain-text rendering of an ingest benchmark report (a table of paths, then the targets)."""

from __future__ import annotations

import textwrap

from pipelines.bench.ingest_bench import IngestBenchReport, cpu_ratios, floor_of

WIDTH = 120  # the terminal's columns the report fits

COLUMNS = (
    "path",
    "MB",
    "events",
    "wall s",
    "MB/s",
    "events/s",
    "peak RSS MB",
    "cpu s",
    "load",
    "note",
)


def _num(value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def format_report(report: IngestBenchReport) -> str:
    """The measurement table, the target ratios with met / not met, and the load."""
    rows = []
    for m in report.measurements:
        note = m.note or ("" if m.ok else m.status)
        if m.ok and "work_wall_s" in m.extra:
            work = f"whole process (work {m.extra['work_wall_s']:.2f} s)"
            note = f"{note}; {work}" if note else work
        rows.append(
            (
                m.path,
                _num(m.mb),
                _num(m.events),
                _num(m.wall_s, 2),
                _num(m.mb_per_s),
                _num(round(m.events_per_s)) if m.events_per_s else "-",
                _num(m.peak_rss_mb, 0) if m.ok else "-",
                _num(m.cpu_s, 2),
                _num(m.extra.get("load1"), 2),
                note,
            )
        )
    widths = [max(len(str(r[i])) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS) - 1)]

    def line(cells: tuple[str, ...]) -> str:
        first = cells[0].ljust(widths[0])
        middle = [c.rjust(w) for c, w in zip(cells[1:-1], widths[1:], strict=True)]
        return "  ".join([first, *middle, cells[-1]]).rstrip()

    trace = report.trace
    out = [
        f"trace: {trace['path']}",
        f"  {trace['mb']:.1f} MB, {trace['events']:,} events ({trace['complete_events']:,}"
        f" complete), {trace['copies']} copies of {trace['source_events']:,} real events",
        "",
        line(COLUMNS),
        line(tuple("-" * len(c) for c in COLUMNS)),
        *(line(r) for r in rows),
        "",
        "targets:",
    ]
    for t in report.targets:
        value = "-" if t.value is None else f"{t.value:.2f}x"
        bound = f"{'>=' if t.at_least else '<='} {t.bound:g}x"
        out.append(f"  {t.description:<36} {value:>9}  (target {bound})  {t.status}")
    cpu = cpu_ratios(report.measurements)
    out.append(
        "  (on CPU time instead: ours/DuckDB "
        + ("-" if cpu["ours_vs_duckdb_cpu"] is None else f"{cpu['ours_vs_duckdb_cpu']:.2f}x")
        + ", ours/HTA "
        + ("-" if cpu["ours_vs_hta_cpu"] is None else f"{cpu['ours_vs_hta_cpu']:.2f}x")
        + "; informational)"
    )
    floor = floor_of(report.measurements, report.setup.get("cores"))
    if floor is not None:
        versus = floor["vs_duckdb_mem"]
        ours = floor["ours_cli_vs_floor"]
        out.append(
            f"  floor: {floor['cpu_s']:.2f} s CPU over {floor['cores']} cores ="
            f" {floor['wall_s']:.2f} s"
            + ("" if versus is None else f" = {versus:.2f}x DuckDB in memory")
            + ("" if ours is None else f"; ours = {ours:.2f}x the floor")
        )
        out.append(
            "    (DuckDB's own read of the complete events into a file + sha256 + interpreter"
            " start,\n    perfectly parallel: no ingest that stores the events goes below it here)"
        )
    paired = report.setup.get("paired_wall_ratios") or []
    if len(paired) > 1:
        out.append("  ours/DuckDB wall within each round: " + ", ".join(f"{r:.2f}" for r in paired))
    load = report.load
    repeat = report.setup.get("repeat", 1)
    legend = (
        "wall s = ours_cli: the whole `tracereplay ingest` process; the others: the probe's own"
        " work (imports excluded); cpu = all threads of the work; peak RSS = ru_maxrss of its"
        " process; load = 1-min load average when the probe started"
        + (f"; median of {repeat} interleaved rounds (HTA: 1)" if repeat > 1 else "")
    )
    out += [
        "",
        *textwrap.wrap(legend, WIDTH),
        f"load at start {load.get('load1_start')}, at end {load.get('load1_end')};",
        f"uptime: {load.get('uptime', '')}",
    ]
    return "\n".join(out)
