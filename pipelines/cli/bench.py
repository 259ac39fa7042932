"""`tracereplay bench`: every benchmark of the project (code in pipelines/bench/).

ingest        ingest speed and memory on a large trace made of real events
sim           simulator timings (one 1M-token request per schedule, and a sweep)
tau-accuracy  how well the fits and verdicts recover what the simulator put in
changepoints  how often the nightly change-point search finds and dates a step, by noise level
compare-power how often `compare` flags a true +5 % change, and no change, by noise level
startup       start-up time of the command against a bare interpreter
fidelity      every quantitative claim of the VPP paper against the calibrated presets
scale         the Parquet lake: a synthetic cluster on 1 vs 2 Dask workers, incremental ingest
engine        CPP, DCPP, VPP on the reference engine, interleaved; --sweep: a/b vs g(a/b,N)"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.cli import ExitCode
from pipelines.cli._common import (
    add_json_option,
    count,
    number,
    output_folder,
    positive_int,
    seed,
)
from pipelines.cli._engine_bench import add_engine_bench
from pipelines.cli._json import emit_json

if TYPE_CHECKING:
    from pipelines.bench.scale import IncrementalProbe

_megabytes = number(float, above=0, what="a size in MB > 0")
DEFAULT_CHANGEPOINT_NOISES = (0.007, 0.01, 0.015, 0.02, 0.03)
"""Run-to-run noise levels of `bench changepoints` (kept here: --help must not import numpy)."""

INGEST_DESCRIPTION = """\
Generate a trace_view.json of --size-mb MB by replicating the real events of the msinsight
level1 rank0 torch_npu export (timestamps and ProfilerStep numbers shifted per copy; metadata
kept once), for each --shape, then parse it, each path in its own process, in --repeat
interleaved rounds (A B A B):

  ours_cli    `tracereplay ingest RANK_DIR` into a fresh warehouse: the command users run
              (chunk segmentation included); wall = the whole process
  duckdb_mem  DuckDB read_json(format='array', explicit columns) into an in-memory table,
              default threads: the baseline
  floor       DuckDB's read of the complete events into a DuckDB file, the file's sha256 beside
              it; its CPU with its interpreter start, over this machine's cores, is the least
              wall any ingest that stores the events can take (printed as "floor")
  hta         Holistic Trace Analysis on the same events in Kineto form (.json.gz); HTA lives in
              its own venv, named by --hta-python or $TRACEREPLAY_HTA_PYTHON, e.g.
                uv venv /tmp/hta-venv && uv pip install -p /tmp/hta-venv HolisticTraceAnalysis
  (with --paths) ours / ours_streamed: ingest_paths in memory / streamed, imports excluded;
              duckdb / duckdb_1t: read_json into a DuckDB file; msgspec; orjson

Shapes: generator (each copy's flow and connection ids shifted, links stay within a copy),
repeated-ids (every copy keeps the export's ids, so one id binds an event of every copy),
markers (generator plus one chunk[req=..,k=..,vs=..] marker per copy: ingest segments it) and
markers-repeated-ids (repeated-ids plus those markers).

Prints wall time, MB/s, events/s and peak RSS per path, the load average, and the targets:
ours wall / DuckDB in-memory wall <= 1 (goal 0.5; the median of the ratios within a round),
ours peak RSS <= the ingest budget, ours >= 10x HTA's MB/s. MB = 10^6 bytes. Exit status:
0 every measured target met, 1 a target missed or our path failed, 2 bad arguments."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="benchmarks: ingest, sim, tau-accuracy, changepoints, compare-power, startup, "
        "fidelity, scale, engine",
    )
    benches = parser.add_subparsers(dest="bench", metavar="BENCH", parser_class=type(parser))
    ingest = benches.add_parser(
        "ingest",
        help="ingest rate and peak RSS vs DuckDB, msgspec and HTA on a large generated trace",
        description=INGEST_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ingest.add_argument(
        "--size-mb",
        type=_megabytes,
        default=500.0,
        help="size of the generated trace (default 500)",
    )
    ingest.add_argument(
        "--workdir",
        metavar="DIR",
        type=output_folder,
        help="where to generate (default: a new tmp dir)",
    )
    ingest.add_argument(
        "--keep", action="store_true", help="keep the generated files and warehouses"
    )
    ingest.add_argument("--skip-hta", action="store_true", help="do not run the HTA baseline")
    ingest.add_argument(
        "--hta-python",
        metavar="PATH",
        help="python of a venv with HolisticTraceAnalysis (default: $TRACEREPLAY_HTA_PYTHON)",
    )
    ingest.add_argument(
        "--hta-mb",
        type=_megabytes,
        metavar="MB",
        help="give HTA only the first MB of events (default: all, unless that would take HTA"
        " more than 3 minutes at its expected ~7.5 MB/s)",
    )
    ingest.add_argument(
        "--repeat",
        type=positive_int,
        default=1,
        metavar="N",
        help="run every path but HTA N times and report the median (default 1)",
    )
    ingest.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="budget of the ours_streamed path, e.g. 2GiB or 700MB"
        " (default $TRACEREPLAY_MAX_MEMORY, else 2 GiB)",
    )
    ingest.add_argument(
        "--shape",
        metavar="LIST",
        default="generator,repeated-ids,markers,markers-repeated-ids",
        help="comma-separated trace shapes: generator (flow ids shifted per copy),"
        " repeated-ids (every copy keeps the export's flow ids), markers (generator plus one"
        " chunk marker per copy: segmented at ingest), markers-repeated-ids (repeated-ids plus"
        " the markers); default all four",
    )
    ingest.add_argument(
        "--flow-ids",
        choices=("renumbered", "repeated"),
        help="one shape by its flow ids (renumbered = generator, repeated = repeated-ids);"
        " overrides --shape",
    )
    ingest.add_argument(
        "--paths",
        metavar="LIST",
        help="comma-separated paths to measure (default ours_cli,duckdb_mem,floor,hta; also"
        " ours,ours_streamed,duckdb,duckdb_1t,msgspec,orjson)",
    )
    add_json_option(ingest)
    ingest.set_defaults(func=run_ingest)

    sim = benches.add_parser(
        "sim", help="simulator timings: one 1M-token request per schedule, and a sweep"
    )
    sim.add_argument(
        "--repeat", type=positive_int, default=5, help="timed runs per schedule (default 5)"
    )
    sim.add_argument(
        "--sweep",
        type=positive_int,
        default=10_000,
        metavar="N",
        help="sweep configurations (default 1e4)",
    )
    sim.set_defaults(func=run_sim)

    accuracy = benches.add_parser(
        "tau-accuracy",
        help="how well tau_k fits and verdicts recover the simulator's truth (rates with n, CI)",
    )
    accuracy.add_argument(
        "--runs", type=positive_int, default=200, help="runs per campaign, DSA half (default 200)"
    )
    accuracy.add_argument("--seed", type=seed, default=0, help="seed of the draws (default 0)")
    accuracy.add_argument(
        "--cells",
        type=positive_int,
        metavar="FITS",
        help="instead: the disturbance table (iid, outlier, AR(1), step x N x G), FITS per cell",
    )
    accuracy.add_argument(
        "--stage-cells",
        type=positive_int,
        metavar="FITS",
        help="instead: the same disturbance table drawn around the simulator's noise-free stage "
        "curves, about 2x faster (FITS 200: n = 400 per cell, about +-2 points, ~75 min on "
        "one core)",
    )
    accuracy.add_argument(
        "--one-run",
        type=positive_int,
        metavar="FITS",
        help="instead: one run of N chunks (--chunks, default 8), model and robust slope "
        "interval coverage and width per disturbance cell, FITS x 2 stage curves per cell",
    )
    accuracy.add_argument(
        "--chunks",
        metavar="N",
        help="with --one-run: the chunk counts of the run, comma-separated, each >= 5 "
        "(e.g. 9,10; default 8)",
    )
    accuracy.add_argument(
        "--only",
        metavar="CELLS",
        help="with --stage-cells or --one-run: the cells to run, comma-separated "
        '(e.g. "x1.05 step,AR(1) 0.7")',
    )
    accuracy.add_argument(
        "--repeats",
        metavar="G",
        help="with --stage-cells: the run counts pooled per fit to run, comma-separated, of 1, 3, "
        "5 (e.g. 3,5; the one-run rows take the longest)",
    )
    accuracy.add_argument(
        "--vpp-fits",
        type=positive_int,
        metavar="FITS",
        help="instead: coverage of the predicted VPP bubble's interval (model x noise x N x G), "
        "FITS per cell",
    )
    add_json_option(accuracy)
    accuracy.set_defaults(func=run_tau_accuracy)

    changepoints = benches.add_parser(
        "changepoints",
        help="how often `regressions` finds and dates a step, by run-to-run noise (with n, CI)",
        description="Draw --series nightly series (--nights values, lognormal run noise, "
        "x(1 + --step/100) from night --step-at on), --clean unchanged ones and --clean series "
        "with one +10 %% night per noise level, run the change-point search of `tracereplay "
        "regressions` on each and count: one confirmed point within --window nights of the "
        "step, no point, the 95 %% date set holding the step's night (and its median width in "
        "runs), clean and one-spike series raising a point; then --rescan-series clean series "
        "of --rescan-nights nights scanned every night as nightly use does (confirmed a point "
        "at any scan; withdrawn later). Every rate with its 95 %% Wilson interval. Baselines on "
        "the same draws: the least-squares split and the posterior window, each told there is "
        "exactly one step (what the data allow). docs/regressions.md",
    )
    changepoints.add_argument(
        "--noise",
        default=",".join(f"{n * 100:g}" for n in DEFAULT_CHANGEPOINT_NOISES),
        metavar="PCTS",
        help="run-to-run noise levels in %%, comma-separated (default %(default)s)",
    )
    changepoints.add_argument("--step", type=float, default=3.0, help="step in %% (default 3)")
    changepoints.add_argument(
        "--nights", type=positive_int, default=60, help="nights a series (60)"
    )
    changepoints.add_argument("--step-at", type=count, default=40, help="first slow night (40)")
    changepoints.add_argument(
        "--series", type=positive_int, default=1000, help="stepped series (1000)"
    )
    changepoints.add_argument(
        "--clean", type=positive_int, default=1000, help="clean and one-spike series, each (1000)"
    )
    changepoints.add_argument(
        "--rescan-series",
        type=count,
        default=1000,
        help="clean series re-scanned nightly, at 2 %% noise (1000; 0: none)",
    )
    changepoints.add_argument(
        "--rescan-nights", type=positive_int, default=90, help="nights of a re-scanned series (90)"
    )
    changepoints.add_argument("--window", type=count, default=2, help="nights either way (2)")
    changepoints.add_argument("--seed", type=seed, default=0, help="seed of the draws (0)")
    add_json_option(changepoints)
    changepoints.set_defaults(func=run_changepoints)

    power = benches.add_parser(
        "compare-power",
        help="how often `compare` calls a true +5 %% regressed and no difference flagged (n, CI)",
        description="Seeded draws of two sets of --runs runs (lognormal run noise 1, 1.5, 2 and "
        "3 %%; the candidate +5 %% or unchanged), judged by `compare`'s statistics from the runs "
        "alone and with a variance prior from a --history-night history of the same noise "
        "(moderated t); counts regressed, improved and a printed effect outside its own "
        "interval, each with its 95 %% Wilson interval. docs/regressions.md",
    )
    power.add_argument("--draws", type=positive_int, default=2000, help="draws per cell (2000)")
    power.add_argument("--runs", type=positive_int, default=5, help="runs a side (5)")
    power.add_argument("--history", type=positive_int, default=20, help="nights of history (20)")
    power.add_argument("--seed", type=seed, default=0, help="seed of the draws (0)")
    add_json_option(power)
    power.set_defaults(func=run_compare_power)

    startup = benches.add_parser(
        "startup",
        help="start-up time of tracereplay commands vs `python -c pass` in the same run",
        description="Wall time of fresh processes (this interpreter): python -c pass (the "
        "baseline), tracereplay --help, tracereplay fit --help and importing the fit stack, "
        "interleaved, after one warm-up each; prints median, min and the ratio to the baseline, "
        "and whether the heavy dependencies have bytecode. Exit status: 0 the --help median is "
        "under 300 ms, 1 it is not, 2 bad arguments.",
    )
    startup.add_argument(
        "--repeat", type=positive_int, default=10, help="runs per command (default 10)"
    )
    add_json_option(startup)
    startup.set_defaults(func=run_startup)
    fidelity = benches.add_parser(
        "fidelity",
        help="every quantitative claim of the VPP paper beside the model: value, error, met",
        description="Each claim of Shi et al. 2026 (arXiv 2608.26523) the simulator can address"
        " (table 2 cells and differences, the section 4 DCPP sweep, Fig. 4's long-sequence"
        " trends, the short-sequence regression, the ablation, the chunk-size finding) beside"
        " the calibrated preset's value, the error and met / missed; rules and the calibration"
        " protocol in docs/fidelity.md. Exit status: 0 every claim met, 1 a claim missed, 2 bad"
        " arguments.",
    )
    fidelity.add_argument(
        "--section",
        action="append",
        choices=("table2", "motivation", "long", "short", "ablation", "chunk"),
        help="only these sections (repeatable; default all)",
    )
    fidelity.add_argument(
        "--variant",
        default="calibrated",
        choices=(
            "calibrated",
            "host-quadratic",
            "short-packed",
            "host-quadratic+short-packed",
        ),
        help="the claims under a model variant docs/fidelity.md section 5 weighs (default: "
        "calibrated, the model)",
    )
    add_json_option(fidelity)
    fidelity.set_defaults(func=run_fidelity)
    scale = benches.add_parser(
        "scale",
        help="lake probes: cluster on 1 vs 2 Dask workers; ingest and fit of one run, 10 vs 1000",
        description=(
            "cluster: one real rank folder replicated --ranks times (rank ids shifted) in a temp"
            " dir, ingested rank by rank into a Parquet lake on a Dask LocalCluster of 1 then 2"
            " worker processes: wall times, ratio, rows = ranks x one rank's. incremental: one"
            " new run ingested into a lake of --small runs, then --large runs (history made by"
            " copying one ingested run's Parquet files); target ratio <= 1.5x. fit: one run of a"
            " new configuration fitted after --small, then --large fitted runs (5"
            " configurations); target ratio <= 1.5x. store: the same ingest on a DuckDB warehouse"
            " file (<= 1.5x), and runs, check, regressions over it (<= 3x each). docs/lake.md,"
            " docs/bench_scale.md"
        ),
    )
    scale.add_argument(
        "--ranks", type=positive_int, default=1024, help="cluster size (default 1024)"
    )
    scale.add_argument("--small", type=positive_int, default=10, help="runs in the small lake (10)")
    scale.add_argument(
        "--large", type=positive_int, default=1000, help="runs in the large lake (1000)"
    )
    scale.add_argument(
        "--skip-cluster", action="store_true", help="only the incremental ingest and fit probes"
    )
    scale.add_argument(
        "--workdir",
        metavar="DIR",
        type=output_folder,
        help="where to generate (default: a tmp dir)",
    )
    add_json_option(scale)
    scale.set_defaults(func=run_scale)

    add_engine_bench(benches)
    parser.set_defaults(func=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return ExitCode.BAD_INPUT


def run_ingest(args: argparse.Namespace) -> int:
    from pipelines.bench.ingest_bench import run_ingest_bench
    from pipelines.bench.ingest_report import format_report

    if args.size_mb <= 0 or (args.hta_mb is not None and args.hta_mb <= 0) or args.repeat < 1:
        print("tracereplay bench ingest: sizes and --repeat must be positive", file=sys.stderr)
        return ExitCode.BAD_INPUT

    from pipelines.bench.ingest_bench import ALL_PATHS, DEFAULT_PATHS, OURS_PATHS, SHAPES
    from pipelines.memory_budget import max_memory

    paths = tuple(p.strip() for p in args.paths.split(",")) if args.paths else DEFAULT_PATHS
    unknown = sorted(set(paths) - set(ALL_PATHS))
    try:
        budget = max_memory(args.max_memory)
    except ValueError as exc:
        print(f"tracereplay bench ingest: --max-memory: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if unknown:
        print(f"tracereplay bench ingest: unknown --paths {unknown}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.hta_python and not (
        os.path.isfile(args.hta_python) and os.access(args.hta_python, os.X_OK)
    ):
        # it is run only after the other paths' minutes of work, and failed there
        print(
            f"tracereplay bench ingest: --hta-python {args.hta_python!r}: no such"
            " executable (give the python of a venv with HTA, or --skip-hta)",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    if args.flow_ids:
        shapes = [next(s for s, (ids, _) in SHAPES.items() if ids == args.flow_ids)]
    else:
        shapes = [s.strip() for s in args.shape.split(",") if s.strip()]
    bad = sorted(set(shapes) - set(SHAPES)) or ([] if shapes else ["(none)"])
    if bad:
        print(
            f"tracereplay bench ingest: --shape {bad}: choose from {', '.join(SHAPES)}",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    reports = []
    for shape in shapes:
        log(f"shape {shape}")
        try:
            report = run_ingest_bench(
                max_memory=budget,
                paths=paths,
                size_mb=args.size_mb,
                workdir=Path(args.workdir) / shape if args.workdir else None,
                keep=args.keep,
                skip_hta=args.skip_hta,
                hta_python=args.hta_python,
                hta_mb=args.hta_mb,
                repeat=args.repeat,
                log=log,
                flow_ids=SHAPES[shape][0],
                markers=SHAPES[shape][1],
            )
        except FileNotFoundError as exc:
            print(f"tracereplay bench ingest: {exc}", file=sys.stderr)
            return ExitCode.BAD_INPUT
        report.setup["shape"] = shape
        reports.append(report)
        if not args.json:
            print(f"shape: {shape}")
            print(format_report(report), flush=True)
            print()
    if args.json:
        out = [r.as_json() for r in reports]
        emit_json(out[0] if len(out) == 1 else out, indent=2)
    ok = all(
        r.all_met and all(m is not None and m.ok for m in map(r.by_path, OURS_PATHS) if m)
        for r in reports
    )
    return ExitCode.OK if ok else ExitCode.CHECK_FAILED


def run_sim(args: argparse.Namespace) -> int:
    from pipelines.bench.sim_bench import run_sim_bench

    if args.repeat < 1 or args.sweep < 1:
        print("tracereplay bench sim: --repeat and --sweep must be positive", file=sys.stderr)
        return ExitCode.BAD_INPUT
    run_sim_bench(args.repeat, args.sweep)
    return ExitCode.OK


def run_tau_accuracy(args: argparse.Namespace) -> int:
    from pipelines.bench.tau_accuracy import run_tau_accuracy as run_report

    sizes = (args.cells, args.stage_cells, args.vpp_fits, args.one_run)
    if args.runs < 1 or any(v is not None and v < 1 for v in sizes):
        print(
            "tracereplay bench tau-accuracy: --runs/--cells/--stage-cells/--vpp-fits/--one-run "
            "must be positive",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    if args.one_run is not None:
        from pipelines.bench.tau_stage_cells import run_one_run_cells

        only = tuple(name.strip() for name in (args.only or "").split(",") if name.strip())
        chunks = "8" if args.chunks is None else args.chunks
        texts = [n.strip() for n in chunks.split(",") if n.strip()]
        if not texts or not all(n.isdigit() and int(n) >= 5 for n in texts):
            print(
                "tracereplay bench tau-accuracy: --chunks takes chunk counts of at least 5 such as "
                f"9,10, got {args.chunks!r}",
                file=sys.stderr,
            )
            return ExitCode.BAD_INPUT
        try:
            run_one_run_cells(args.one_run, args.seed, only, args.json, tuple(map(int, texts)))
        except ValueError as exc:
            print(f"tracereplay bench tau-accuracy: {exc}", file=sys.stderr)
            return ExitCode.BAD_INPUT
        return ExitCode.OK
    if args.chunks is not None:
        print("tracereplay bench tau-accuracy: --chunks goes with --one-run", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.stage_cells is not None:
        from pipelines.bench.tau_stage_cells import run_stage_cells

        only = tuple(name.strip() for name in (args.only or "").split(",") if name.strip())
        texts = [g.strip() for g in (args.repeats or "").split(",") if g.strip()]
        if not all(g.isdigit() for g in texts):
            print(
                f"tracereplay bench tau-accuracy: --repeats takes run counts such as 3,5, "
                f"got {args.repeats!r}",
                file=sys.stderr,
            )
            return ExitCode.BAD_INPUT
        repeats = tuple(int(g) for g in texts)
        try:
            run_stage_cells(args.stage_cells, args.seed, only, args.json, repeats)
        except ValueError as exc:
            print(f"tracereplay bench tau-accuracy: {exc}", file=sys.stderr)
            return ExitCode.BAD_INPUT
        return ExitCode.OK
    if args.only is not None or args.repeats is not None:
        print(
            "tracereplay bench tau-accuracy: --only and --repeats go with --stage-cells",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    if args.vpp_fits is not None:
        from pipelines.bench.vpp_pred import run_vpp_pred

        run_vpp_pred(args.vpp_fits, args.seed, args.json)
        return ExitCode.OK
    if args.cells is not None:
        from pipelines.bench.tau_cells import run_cells

        run_cells(args.cells, args.seed, args.json)
        return ExitCode.OK
    run_report(args.runs, args.seed, args.json)
    return ExitCode.OK


def run_changepoints(args: argparse.Namespace) -> int:
    from pipelines.bench.changepoint_accuracy import run_changepoint_bench

    try:
        noises = tuple(float(v) / 100 for v in args.noise.split(",") if v.strip())
    except ValueError:
        noises = ()
    if not noises or any(not (math.isfinite(n) and n > 0) for n in noises):  # inf ran on
        print(
            f"tracereplay bench changepoints: --noise takes percentages such as 1,2, "
            f"got {args.noise!r}",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    counts = (args.nights, args.series, args.clean)
    if min(counts) < 1 or args.window < 0 or not 1 < args.step_at <= args.nights:
        print(
            "tracereplay bench changepoints: --nights, --series and --clean must be positive, "
            "--window not negative and --step-at within 2..--nights",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    run_changepoint_bench(
        noises,
        step=args.step / 100,
        nights=args.nights,
        step_at=args.step_at,
        series=args.series,
        clean=args.clean,
        window=args.window,
        seed=args.seed,
        as_json=args.json,
        rescan_nights=args.rescan_nights,
        rescan_series=args.rescan_series,
    )
    return ExitCode.OK


def run_compare_power(args: argparse.Namespace) -> int:
    from pipelines.bench.compare_power import run_compare_power_bench

    if args.draws < 1 or args.runs < 3 or args.history < 2:
        print(
            "tracereplay bench compare-power: --draws must be positive, --runs at least 3 and "
            "--history at least 2",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    run_compare_power_bench(
        draws=args.draws,
        runs=args.runs,
        history=args.history,
        seed=args.seed,
        as_json=args.json,
    )
    return ExitCode.OK


def run_startup(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from pipelines.bench.startup import (
        dependency_bytecode,
        format_startup,
        help_target_met,
        measure_startup,
    )

    if args.repeat < 1:
        print("tracereplay bench startup: --repeat must be positive", file=sys.stderr)
        return ExitCode.BAD_INPUT
    timings, bytecode = measure_startup(args.repeat), dependency_bytecode()
    met = help_target_met(timings)
    if args.json:
        record = {"timings": [asdict(t) for t in timings], "bytecode": bytecode, "met": met}
        emit_json(record, indent=2)
    else:
        print(format_startup(timings, bytecode))
    return ExitCode.OK if met else ExitCode.CHECK_FAILED


def run_fidelity(args: argparse.Namespace) -> int:
    from pipelines.bench.fidelity import SECTIONS, all_claims
    from pipelines.cli._fidelity import format_claims

    claims = all_claims(args.section or tuple(SECTIONS), args.variant)
    if args.json:
        emit_json([c.as_dict() for c in claims], indent=2)
    else:
        print(format_claims(claims, args.variant))
    return ExitCode.OK if all(c.met for c in claims) else ExitCode.CHECK_FAILED


INCREMENTAL_TARGET = 1.5


def _ratio_json(probe: IncrementalProbe) -> dict:
    """An incremental probe (ingest or fit, small vs large history) as the JSON of `bench scale`."""
    return {
        "small": probe.small,
        "large": probe.large,
        "wall_s": {str(k): round(v, 3) for k, v in probe.wall_s.items()},
        "ratio": round(probe.ratio, 3),
        "target": INCREMENTAL_TARGET,
    }


def run_scale(args: argparse.Namespace) -> int:
    import tempfile

    from pipelines.bench.scale import (
        COMMAND_TARGET,
        COMMANDS,
        cluster_probe,
        fit_probe,
        incremental_probe,
        store_probe,
    )

    work = Path(args.workdir or tempfile.mkdtemp(prefix="tracereplay-scale-"))
    out: dict[str, object] = {"workdir": str(work)}
    ok = True
    if not args.skip_cluster:
        probe = cluster_probe(work / "cluster", args.ranks)
        ratio = probe.wall_s[1] / probe.wall_s[2]
        ok &= probe.rows_match
        out["cluster"] = {
            "ranks": probe.ranks,
            "wall_s_1_worker": round(probe.wall_s[1], 2),
            "wall_s_2_workers": round(probe.wall_s[2], 2),
            "speedup_2_vs_1": round(ratio, 3),
            "rows": probe.rows,
            "one_rank_rows": probe.one_rank_rows,
            "rows_equal_ranks_x_one_rank": probe.rows_match,
        }
        if not args.json:
            print(
                f"cluster  {probe.ranks} ranks: 1 worker {probe.wall_s[1]:.1f} s, 2 workers "
                f"{probe.wall_s[2]:.1f} s, speed-up {ratio:.2f}x; rows = {probe.ranks} x one "
                f"rank's: {'yes' if probe.rows_match else 'NO'} {probe.rows}"
            )
    inc = incremental_probe(work / "incremental", args.small, args.large)
    ok &= inc.ratio <= INCREMENTAL_TARGET
    out["incremental"] = _ratio_json(inc)
    fit = fit_probe(work / "fit", args.small, args.large)
    ok &= fit.ratio <= INCREMENTAL_TARGET
    out["fit"] = _ratio_json(fit)
    store = store_probe(work / "store", args.small, args.large)
    ok &= store.ingest_ratio <= INCREMENTAL_TARGET
    ok &= all(store.command_ratio(c) <= COMMAND_TARGET for c in COMMANDS)
    out["duckdb_file"] = {
        "small": store.small,
        "large": store.large,
        "ingest": {
            "wall_s": {str(k): round(v, 3) for k, v in store.ingest_s.items()},
            "ratio": round(store.ingest_ratio, 3),
            "target": INCREMENTAL_TARGET,
        },
        **{
            c: {
                "wall_s": {str(k): round(v, 3) for k, v in store.command_s[c].items()},
                "exit_status": {str(k): v for k, v in store.command_rc[c].items()},
                "ratio": round(store.command_ratio(c), 3),
                "target": COMMAND_TARGET,
            }
            for c in COMMANDS
        },
    }
    if args.json:
        emit_json(out, indent=2)
    else:
        for c in COMMANDS:
            ratio = store.command_ratio(c)
            print(
                f"file     {c:<11} over {store.small} runs {store.command_s[c][store.small]:.2f} s,"
                f" over {store.large} {store.command_s[c][store.large]:.2f} s: {ratio:.2f}x"
                f" (target <= {COMMAND_TARGET}x: {'met' if ratio <= COMMAND_TARGET else 'UNMET'})"
            )
        ratio = store.ingest_ratio
        verdict = "met" if ratio <= INCREMENTAL_TARGET else "UNMET"
        print(
            f"file     ingest one run after {store.small} runs {store.ingest_s[store.small]:.2f} s,"
            f" after {store.large} {store.ingest_s[store.large]:.2f} s: {ratio:.2f}x"
            f" (target <= {INCREMENTAL_TARGET}x: {verdict})"
        )
        lake = (("lake     ingest one run", inc), ("fit      one new configuration", fit))
        for label, probe in lake:
            verdict = "met" if probe.ratio <= INCREMENTAL_TARGET else "UNMET"
            print(
                f"{label} after {probe.small} runs {probe.wall_s[probe.small]:.2f} s, after "
                f"{probe.large} runs {probe.wall_s[probe.large]:.2f} s: {probe.ratio:.2f}x "
                f"(target <= {INCREMENTAL_TARGET}x: {verdict})"
            )
    return ExitCode.OK if ok else ExitCode.CHECK_FAILED
