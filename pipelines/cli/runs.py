"""`tracereplay runs [SEL]`: one line per stored run."""

from __future__ import annotations

import argparse
import sys

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, add_warehouse_option, store_of
from pipelines.cli._json import emit_json

DESCRIPTION = """\
List the runs in the warehouse, oldest first, one line each: id (it holds the reader, the
configuration or profiler folder name and the collection time: docs/run_identity.md), source,
model, schedule, sequence length, chunk size, ranks, makespan (first event start to last event
end) and whether chunks are stored. SEL is a run selector (docs/selectors.md), e.g.
`model=deepseek-v3.1,schedule=vpp|cpp,since=2026-11-01`; simulated reruns only with
`replays=yes`. Exit status: 0 ok, 2 no warehouse, a bad selector or no run matches."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "runs",
        help="list stored runs (id, model, schedule, lengths, ranks, makespan, chunks)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("selector", nargs="?", default=None, metavar="SEL", help="run selector")
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.analysis.runs.run_views import run_list
    from pipelines.cli._format import console_width, duration, render_table, short_ids, tokens
    from pipelines.selectors import SelectorError, require_runs

    con = store_of(args).open(read_only=True)
    try:
        try:
            run_ids = require_runs(con, args.selector, copies=True)  # list every stored run
        except SelectorError as exc:
            print(f"tracereplay runs: {exc}", file=sys.stderr)
            return ExitCode.BAD_INPUT
        frame = run_list(con, run_ids)
    finally:
        con.close()
    if args.json:
        emit_json({"runs": frame.to_dicts()})
        return ExitCode.OK
    ids = short_ids(frame["run_id"].to_list()) if frame.height else {}
    rows = [
        (
            ids[r["run_id"]],
            r["source"],
            r["model"] or "-",
            r["schedule"] or "-",
            f"{tokens(r['seq_len'])}/{tokens(r['chunk_size'])}",
            r["ranks"],
            duration(r["makespan_ns"]),
            "yes" if r["chunks"] else "no",
        )
        for r in frame.iter_rows(named=True)
    ]
    # no `collected` column: the run id carries the collection time (docs/run_identity.md)
    headers = ("run", "source", "model", "sched", "seq/chunk", "ranks", "makespan", "chunks")
    rows = _model_cut_to_fit(headers, rows, MODEL_COLUMN, console_width())
    print(render_table(headers, rows, right=(4, 5, 6)))
    print(
        f"\n{frame.height} runs, oldest first; ids cut to a unique prefix (whole in --json);"
        " `tracereplay show RUN` for one run"
    )
    return ExitCode.OK


MODEL_COLUMN = 2
MIN_MODEL_WIDTH = 8


def _model_cut_to_fit(headers, rows, column: int, width: int) -> list[tuple]:
    """Rows with the model name cut (with '…') so that every row fits `width` on one line: the
    other columns keep their full width (a run id must stay whole to be typed), the model
    takes what is left, at least MIN_MODEL_WIDTH."""
    from pipelines.cli._format import ellipsis

    if not rows:
        return list(rows)
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    others = sum(w for i, w in enumerate(widths) if i != column) + len(headers) - 1
    room = max(MIN_MODEL_WIDTH, width - others)
    return [(*r[:column], ellipsis(r[column], room), *r[column + 1 :]) for r in rows]
