"""`tracereplay replay RUN_ID`: the measured tau of one run under other schedules."""

from __future__ import annotations

import argparse
import sys

from pipelines.cli import ExitCode
from pipelines.cli._common import (
    add_json_option,
    add_warehouse_option,
    one_run,
    output_folder,
    positive_int,
    shown_path,
    store_of,
)
from pipelines.cli._json import emit_json

DESCRIPTION = """\
Take the chunks (tau_k per chunk and stage) measured in one ingested run, re-simulate its requests
under other schedules, and write each simulated rerun into the warehouse as run
RUN_ID~replay-<schedule>-<cost> (source 'sim', replay_of RUN_ID; runs, ranks, chunks, slices,
comm_ops, step_breakdown). Replaying again replaces those runs: no rows are added. A run without
stored chunks is segmented first (`tracereplay chunks`).

Cost models: tabulated (the measured latency of each chunk size and prefix, the fit for sizes
never measured) or fitted (tau(c, p) = alpha c + beta c (p + c/2) + gamma fitted to every
chunk). Transfers: the model preset's link figures when the run's model is a simulator preset
(--comm auto), else free. Prints makespan, mean TTFT, bubble and exposed-communication shares of
the measured run and each rerun, and the speed-up relative to the rerun under the measured run's
own schedule. Exit status: 0 ok, 2 unknown run, run without chunks, or bad arguments."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from pipelines.replay.options import COMM_CHOICES, COSTS, REPLAY_SCHEDULES

    parser = subparsers.add_parser(
        "replay",
        help="replay a run's measured tau under other schedules and store the reruns",
        description=DESCRIPTION,
        epilog="example: tracereplay replay <run_id> --schedules cpp,vpp,vpp_pack --cost fitted",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="an ingested run (see `runs` table)")
    parser.add_argument(
        "--schedules",
        default=",".join(REPLAY_SCHEDULES),
        metavar="LIST",
        help=f"comma-separated schedules (default: {','.join(REPLAY_SCHEDULES)}; dcpp_sglang "
        "and dcpp_vllm_ascend name the DCPP rule, dcpp is vLLM-Ascend's)",
    )
    parser.add_argument(
        "--cost", choices=COSTS, default="tabulated", help="cost model (default: tabulated)"
    )
    parser.add_argument(
        "--comm",
        choices=COMM_CHOICES,
        default="auto",
        help="transfers between ranks: preset link figures, none (free), or auto (preset when "
        "the model is a simulator preset) (default: auto)",
    )
    parser.add_argument(
        "--vp", type=positive_int, default=2, help="virtual stages per rank for vpp* (default: 2)"
    )
    parser.add_argument(
        "--out",
        type=output_folder,
        default=None,
        metavar="DIR",
        help="also write each rerun as torch_npu *_ascend_pt folders under DIR/<schedule>/",
    )
    parser.add_argument(
        "--no-write", action="store_true", help="compare only; write nothing to the warehouse"
    )
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.replay.store import ReplayError, format_comparison, replay_run

    store = store_of(args)
    if not store.exists():
        print(f"tracereplay replay: no warehouse at {store.location}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    schedules = [s.strip() for s in args.schedules.split(",") if s.strip()]
    con = store.open(read_only=args.no_write)
    try:
        run_id = one_run(con, args.run_id)
        report = replay_run(
            con,
            run_id,
            schedules,
            cost=args.cost,
            comm=args.comm,
            vp=args.vp,
            write=not args.no_write,
        )
    except (ReplayError, ValueError) as exc:
        print(f"tracereplay replay: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    finally:
        con.close()
    written = []
    if args.out is not None:
        from pipelines.sim.writers_ascend import write_ascend_pt

        for schedule, result in report.results.items():
            written += [str(p) for p in write_ascend_pt(result, args.out / schedule)]
    if args.json:
        emit_json({**report.as_json(), "written": written}, indent=2)
    else:
        print(format_comparison(report))
        if not args.no_write:
            print(f"\nwrote {len(report.reruns)} reruns to {store.location} (replay_of = {run_id})")
        for folder in written:
            print(f"wrote {shown_path(folder)}")
    return ExitCode.OK
