"""`tracereplay bench engine`: the parser (light: no torch, no polars) and the command.

The library is pipelines/bench/engine_rounds.py (imported when the command runs: numpy, polars);
`add_engine_bench(benches)` adds the subcommand to `tracereplay bench`'s subparsers
(pipelines/cli/bench.py)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, output_folder, positive_int
from pipelines.cli._format import duration, render_table
from pipelines.cli._json import emit_json
from pipelines.cli._workload_args import add_shape_arguments, workload_config

DESCRIPTION = """\
Run the reference engine (tracereplay workload: a small transformer on two local ranks, gloo on
CPU) under CPP, DCPP and VPP, interleaved (round 1: cpp dcpp vpp, round 2: cpp dcpp vpp, ...),
each rank pinned to its own core, then validate every run (tracereplay validate) and print per
run: steps per request, measured TTFT and bubble, the replayed TTFT's error (the run's own
schedule, measured tau, host time per call), the window work ratio of the two ranks (VPP: the
fold-back identity tau_{k-1} + tau_{k+1} = 2 tau_k, 1 when it holds) with its t interval over
the passes, and the on-CPU time (forwards, and the rank processes in all). Then the acceptance
lines of issue 34 item 4: VPP's bubble below CPP's and DCPP's steps above CPP's in every round,
replayed TTFT within 10 % for all three schedules, the fold-back interval pooled over every VPP
pass. --sweep instead runs CPP and VPP for each (hidden, chunk) of --configs and compares VPP's
TTFT saving (measured, and the CPP run's tau replayed under VPP) with the analytic g(a/b, N).
Needs PyTorch (docs/workload.md). Exit status: 0 every line met, 1 a line missed, 2 bad
arguments or no torch."""


def add_engine_bench(benches: argparse._SubParsersAction) -> None:
    parser = benches.add_parser(
        "engine",
        help="CPP, DCPP, VPP on the reference engine in interleaved rounds; --sweep: a/b vs g",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--rounds", type=positive_int, default=5, help="interleaved rounds (default: 5)"
    )
    add_shape_arguments(parser, repeats=4, repeats_help="profiled passes per run")
    parser.add_argument("--sweep", action="store_true", help="the a/b sweep instead of the rounds")
    parser.add_argument(
        "--configs",
        default=None,
        metavar="H:C,H:C",
        help="--sweep: hidden:chunk pairs (default: 64:512,128:256,256:128,512:64)",
    )
    parser.add_argument(
        "--workdir", metavar="DIR", type=output_folder, help="keep the traces here (default: tmp)"
    )
    add_json_option(parser)
    parser.set_defaults(func=run_engine_bench)


def _configs(text: str | None) -> list[tuple[int, int]] | None:
    if text is None:
        return None
    pairs = []
    for item in text.split(","):
        hidden, _, chunk = item.partition(":")
        pairs.append((int(hidden), int(chunk)))
    return pairs


def run_engine_bench(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("torch") is None:
        print(
            "tracereplay bench engine: PyTorch is not installed (docs/workload.md)",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    try:
        configs = _configs(args.configs)
    except ValueError:
        print("tracereplay bench engine: --configs takes hidden:chunk pairs", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.rounds < 1:
        print("tracereplay bench engine: --rounds must be at least 1", file=sys.stderr)
        return ExitCode.BAD_INPUT

    try:
        base = workload_config(args)
    except ValueError as exc:
        print(f"tracereplay bench engine: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        return _run(args, base, work, configs)


def _run(args, base, work: Path, configs) -> int:
    from pipelines.bench import engine_rounds as er

    def log(message: str) -> None:  # progress on stderr, also with --json
        print(message, file=sys.stderr, flush=True)

    if args.sweep:
        runs = er.run_sweep(base, work, configs or er.SWEEP, log=log)
        rows = er.validate_runs(runs, work / "bench.duckdb")
        sweep = er.sweep_rows(rows, runs)
        if args.json:
            emit_json({"sweep": sweep, "runs": rows}, indent=None)
        else:
            print(format_sweep(sweep))
        return ExitCode.OK
    runs = er.run_rounds(base, work, args.rounds, log=log)
    rows = er.validate_runs(runs, work / "bench.duckdb")
    checks = er.acceptance(rows)
    if args.json:
        emit_json({"runs": rows, "acceptance": checks}, indent=None)
    else:
        print(format_rounds(rows, checks))
    return ExitCode.OK if all(c["met"] for c in checks) else ExitCode.CHECK_FAILED


def _ratio(w: dict | None) -> str:
    if not w:
        return "-"
    if w["low"] is None:
        return f"{w['mean']:.3f}"
    return f"{w['mean']:.3f} [{w['low']:.3f}, {w['high']:.3f}]"


def format_rounds(rows: list[dict], checks: list[dict]) -> str:

    table = []
    for r in rows:
        own = r["replays"].get(r["schedule"], {})
        err = own.get("ttft_rel_err")
        table.append(
            (
                r["label"],
                f"{r['steps']:.1f}",
                duration(r["measured_ttft_ns"]),
                "-" if err is None else f"{100 * err:+.1f}%",
                f"{100 * r['measured_bubble']:.1f}%",
                _ratio(r.get("window_ratio")),
                f"{100 * r['cpu_share']:.0f}%" if r.get("cpu_share") else "-",
                f"{r['forward_cpu_s']:.2f} s" if r.get("forward_cpu_s") else "-",
                f"{r['process_cpu_s']:.1f} s",
                f"{r['wall_s']:.1f} s",
            )
        )
    headers = (
        *("run", "steps/req", "TTFT meas", "replay err", "bubble", "window ratio [95% CI]"),
        *("CPU share", "fwd CPU", "proc CPU", "wall"),
    )
    lines = [render_table(headers, table, right=(1, 2, 3, 4, 6, 7, 8, 9)), ""]
    for c in checks:
        lines.append(f"{'met   ' if c['met'] else 'MISSED'} {c['line']}: {c['detail']}")
    return "\n".join(lines)


def format_sweep(rows: list[dict]) -> str:

    table = [
        (
            r["config"],
            str(r["n_chunks"]),
            f"{r['a_ms']:.2f}",
            f"{r['b_ms']:.2f}",
            f"{r['ab']:.2f}",
            f"{100 * r['analytic_saving']:.1f}%",
            f"{100 * r['replayed_busy_saving']:.1f}%",
            f"{100 * r['replayed_saving']:.1f}%",
            f"{100 * r['measured_saving']:.1f}%",
            f"{100 * r['cpp_bubble']:.1f}% / {100 * r['vpp_bubble']:.1f}%",
        )
        for r in rows
    ]
    headers = (
        *("config", "N", "a ms", "b ms/chunk", "a/b", "g(a/b,N)", "repl busy"),
        *("repl +host", "measured", "bubble cpp / vpp"),
    )
    return render_table(headers, table, right=tuple(range(1, 10))) + (
        "\nsaving = 1 - TTFT(vpp) / TTFT(cpp); a, b: on-CPU tau_k = a + b k of the CPP run; "
        "repl: the CPP run's tau replayed under VPP\n(busy time alone, as g assumes; +host: "
        "the measured host time on each of VPP's twice as many calls); measured: one run each"
    )
