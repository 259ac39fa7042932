"""`tracereplay demo`: simulated campaign -> profiler folders -> warehouse -> tau_k fits, check."""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option

DESCRIPTION = """\
Run the whole pipeline on a simulated campaign: the three model presets qwen3-coder-30b-a3b,
deepseek-v3.1 (dense attention) and glm-5.2 (DeepSeek sparse attention, DSA) x schedules cpp and
vpp x prompts of 128K and 256K tokens in 16K chunks, pp=2, x --repeats runs with 3% noise and
distinct seeds. Each run is written as torch_npu *_ascend_pt folders under <out>/raw/, ingested
into the warehouse, segmented into chunks by its chunk markers, and tau_k is fitted per
configuration and virtual stage (stored as the table tau_fits). The campaign is the one the
Dagster asset sim_campaign writes (same folders, same bytes). Prints the fit table with its
verdicts, the self-check (the verdict policy the Dagster checks apply: runs with dense attention
give no flagged curve, runs with sparse attention no linear one; too_noisy / too_short decide
nothing), and a replay of the first DeepSeek CPP run under cpp, vpp and vpp_pack. Progress and
timings go to stderr. Re-running it rewrites the same bytes and adds no rows.

Exit status: 0 self-check passed, 1 self-check failed, 2 an input was quarantined."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="simulate a campaign, ingest it, fit tau_k, check the verdicts (the main job)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="output folder: raw traces in DIR/raw/ (default: data/demo/ under the project root)",
    )
    parser.add_argument(
        "--warehouse",
        type=Path,
        default=None,
        metavar="FILE",
        help="DuckDB warehouse (default: <out>/warehouse.duckdb with --out, else the one "
        "`tracereplay fit` reads: $TRACEREPLAY_WAREHOUSE or data/warehouse.duckdb)",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, metavar="N", help="runs per configuration (default: 3)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smaller campaign: cpp at 128K only (3 models x N repeats)",
    )
    parser.add_argument("--no-replay", action="store_true", help="skip the replay at the end")
    add_json_option(parser)
    parser.set_defaults(func=run)


def config_from_args(args: argparse.Namespace):
    from pipelines import paths
    from pipelines.campaign import Campaign
    from pipelines.demo import DemoConfig

    # without --out the demo's tables go where `tracereplay fit` looks (docs/paths.md)
    warehouse = args.warehouse or (None if args.out else paths.warehouse_path())
    out = args.out or paths.demo_dir()
    campaign = Campaign(repeats=args.repeats)
    config = DemoConfig(out=out, warehouse=warehouse, campaign=campaign)
    if args.quick:
        config = config.quick()
    if args.no_replay:
        config = replace(config, replay_schedules=())
    return config


def _json_value(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def report_json(report) -> dict:
    config = report.config
    curves = report.curves.to_dicts() if report.curves is not None else []
    return {
        "out": str(config.out),
        "warehouse": str(config.warehouse_path),
        "runs": len(report.run_ids),
        "run_ids": report.run_ids,
        "quarantined": report.quarantined,
        "chunks": report.chunks,
        "unassigned_fraction_max": report.unassigned_fraction_max,
        "curves": [{k: _json_value(v) for k, v in row.items()} for row in curves],
        "check": report.check.as_json(),
        "replay": report.replay.as_json() if report.replay is not None else None,
        "rows_added": {
            t: report.rows_after.get(t, 0) - report.rows_before.get(t, 0) for t in report.rows_after
        },
        "timings_s": {k: round(v, 2) for k, v in report.timings.items()},
    }


def run(args: argparse.Namespace) -> int:
    from pipelines.cli.fit import format_table
    from pipelines.demo import run_demo

    if args.repeats < 2:
        print("tracereplay demo: --repeats must be at least 2 (fits pool repeats)", file=sys.stderr)
        return ExitCode.BAD_INPUT
    config = config_from_args(args)
    print(
        f"demo: {len(config.campaign.runs())} simulated runs -> {config.raw_dir}, "
        f"warehouse {config.warehouse_path}",
        file=sys.stderr,
    )
    report = run_demo(config)
    for message in report.quarantined:
        print(message, file=sys.stderr)
    if args.json:
        print(json.dumps(report_json(report), indent=1, default=str))
    else:
        print(format_table(report.curves))
        print()
        print(report.check.summary())
        for failure in report.check.failures:
            print(f"  {failure}")
        if report.replay is not None:
            from pipelines.replay.store import format_comparison

            print()
            print(format_comparison(report.replay))
        added = sum(report.rows_after.values()) - sum(report.rows_before.values())
        print(
            f"\n{len(report.run_ids)} runs, {report.chunks} chunks in {config.warehouse_path} "
            f"({added} rows added by this run); {report.timings['total_s']:.1f} s"
        )
    print(f"demo finished in {report.timings['total_s']:.1f} s", file=sys.stderr)
    if report.quarantined:
        return ExitCode.BAD_INPUT
    return ExitCode.OK if report.check.ok else ExitCode.CHECK_FAILED
