"""`tracereplay demo`: simulated campaign -> profiler folders -> warehouse -> tau_k fits, check."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, output_folder, positive_int, shown_path
from pipelines.cli._json import emit_json
from pipelines.labels import json_value

DESCRIPTION = """\
Run the whole chain on a simulated campaign (docs/demo.md): the three model presets
qwen3-coder-30b-a3b, deepseek-v3.1 (dense attention) and glm-5.2 (DeepSeek sparse attention,
DSA) x cpp and vpp at 128K and 256K plus dcpp, vpp_async and vpp_pack at 128K, in 16K chunks,
pp=2, x --repeats runs with 3% per-task noise and distinct seeds; and a nightly history: 3
configurations at 64K x 20 nights, 1.8% run-level noise, collected one night apart, with +5%
compute injected into deepseek-v3.1 cpp from night 13. Each run is written as torch_npu
*_ascend_pt folders under <out>/raw/ (the bytes the Dagster asset sim_campaign writes), then:
ingest, chunks, tau_k fits (table tau_fits) with the self-check (the verdict policy the Dagster
checks apply to fixed-chunk schedules, dcpp left out: dense-attention curves not flagged, DSA
curves not linear), `tracereplay compare` of deepseek-v3.1 128K cpp vs vpp, `tracereplay
regressions` over the history, `tracereplay check` (data quality), a replay of the first
DeepSeek CPP run under cpp, vpp and vpp_pack, and `tracereplay dashboards` into <out>/site/.
Progress and timings go to stderr; it ends with the path of the dashboards' index page.
Re-running it rewrites the same bytes and adds no rows.

Exit status: 0 all of: the self-check passed, the data check has no failing error-severity
check, and the regressions found are exactly the injected one (a confirmed regression in
deepseek-v3.1 cpp 64K within 2 nights of night 13, nothing elsewhere; with --quick, which
writes no history, none at all); 1 when any of these fails; 2 an input was quarantined. The
comparison's verdicts are reported, not judged (VPP is expected to beat CPP)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="simulate a campaign, ingest it, fit tau_k, check the verdicts (the main job)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        type=output_folder,
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
        "--repeats",
        type=positive_int,
        default=3,
        metavar="N",
        help="runs per configuration (default: 3)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smaller campaign: cpp at 128K only (3 models x N repeats), no nightly history",
    )
    parser.add_argument("--no-replay", action="store_true", help="skip the replay")
    parser.add_argument(
        "--no-dashboards", action="store_true", help="skip the dashboards (<out>/site/)"
    )
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
    if args.no_dashboards:
        config = replace(config, dashboards=False)
    return config


def _comparison_json(report) -> dict | None:
    from pipelines.cli.compare import to_json

    if report.comparison is None:
        return {"skipped": report.comparison_skipped}
    return to_json(report.comparison)


def _regressions_json(check) -> dict | None:
    if check is None:
        return None
    return {
        "ok": check.ok,
        "series": check.series,
        "expected": check.expected,
        "unexpected": len(check.unexpected),
        "changes": [{k: json_value(v) for k, v in c.as_dict().items()} for c in check.changes],
    }


def report_json(report) -> dict:
    from pipelines.quality import check_report as quality_report

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
        "curves": [{k: json_value(v) for k, v in row.items()} for row in curves],
        "check": report.check.as_json(),
        "replay": report.replay.as_json() if report.replay is not None else None,
        "comparison": _comparison_json(report),
        "regressions": _regressions_json(report.regressions),
        "data_check": quality_report.as_dict(report.quality) if report.quality else None,
        "site": report.site.as_dict() if report.site is not None else None,
        "rows_added": {
            t: report.rows_after.get(t, 0) - report.rows_before.get(t, 0) for t in report.rows_after
        },
        "timings_s": {k: round(v, 2) for k, v in report.timings.items()},
    }


def exit_code(report) -> ExitCode:
    """Quarantine: 2; a failed self-check, data check or regression expectation: 1; else 0."""
    if report.quarantined:
        return ExitCode.BAD_INPUT
    passed = (
        report.check.ok
        and (report.quality is None or report.quality.ok)
        and (report.regressions is None or report.regressions.ok)
    )
    return ExitCode.OK if passed else ExitCode.CHECK_FAILED


def _print_text(report) -> None:
    from pipelines.cli.fit import format_table
    from pipelines.quality.check_report import format_failures, summary_line

    config = report.config
    print(format_table(report.curves))
    print()
    print(report.check.summary())
    for failure in report.check.failures:
        print(f"  {failure}")
    print()
    if report.comparison is not None:
        from pipelines.cli.compare import format_comparison

        print("Compare (tracereplay compare):")
        print(format_comparison(report.comparison))
    else:
        print(f"Compare skipped: {report.comparison_skipped}")
    if report.regressions is not None:
        from pipelines.cli.regressions import format_changes

        print()
        print("Regressions (tracereplay regressions):")
        if report.regressions.changes:
            print(format_changes(report.regressions.changes))
        print(report.regressions.summary())
    if report.quality is not None:
        print()
        print(f"Data check (tracereplay check): {summary_line(report.quality)}")
        if not report.quality.ok:
            print(format_failures(report.quality))
    if report.replay is not None:
        from pipelines.replay.store import format_comparison as format_replay

        print()
        print(format_replay(report.replay))
    added = sum(report.rows_after.values()) - sum(report.rows_before.values())
    print(
        f"\n{len(report.run_ids)} runs, {report.chunks} chunks in {config.warehouse_path} "
        f"({added} rows added by this run); {report.timings['total_s']:.1f} s"
    )
    if report.site is not None:
        print(f"Dashboards: {len(report.site.pages)} pages; open {shown_path(report.site.index)}")


def run(args: argparse.Namespace) -> int:
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
        emit_json(report_json(report))
    else:
        _print_text(report)
    print(f"demo finished in {report.timings['total_s']:.1f} s", file=sys.stderr)
    if report.site is not None:
        print(f"dashboards: open {shown_path(report.site.index)}", file=sys.stderr)
    return exit_code(report)
