"""`tracereplay workload`: run the reference PyTorch prefill engine and write Kineto traces."""

from __future__ import annotations

import argparse
import importlib.util
import sys

from pipelines.cli import ExitCode
from pipelines.cli._common import (
    add_json_option,
    count,
    number,
    output_folder,
    positive_int,
    seed,
    shown_path,
)
from pipelines.cli._json import emit_json
from pipelines.cli._workload_args import add_shape_arguments, workload_config

DESCRIPTION = """\
Run chunked prefill of a small decoder-only transformer (random weights, GQA, KV cache) on two
local ranks (torch.distributed, gloo on CPU) under CPP, DCPP (chunk sizes chosen online by the
simulator's DCPP rule from the forwards timed so far, docs/workload.md) or VPP (fold-back, 2
ranks x 2 virtual stages each) inside torch.profiler, and write one Kineto trace per rank into
DIR: every forward is a chunk[req=..,k=..,vs=..,tokens=..,prefix=..] range and the run facts
(model, schedule, chunk_size, seq_len, pp, vp, attention) are trace metadata, so `tracereplay
ingest DIR` segments them with no flags. --attention sparse reads only the top-k prefix keys an
indexer chooses (DSA-like), so tau_k stops being linear. --repeats N runs N profiled passes (the
pipeline drained between them, pooled per chunk index by the fit) after --warmup passes kept out
of the trace; each forward's on-CPU time rides in the trace metadata, so `tracereplay validate`
can tell how much of the wall clock other jobs took. Needs PyTorch (docs/workload.md:
`scripts/install-torch`). Exit status: 0 ok, 2 torch missing or bad arguments."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "workload",
        help="run the reference chunked-prefill engine (PyTorch, 2 ranks) and write traces",
        description=DESCRIPTION,
        epilog="example: tracereplay workload --seq-len 8192 --chunk 512 --schedule vpp "
        "--out runs/vpp-dense && tracereplay validate runs",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_shape_arguments(
        parser,
        repeats=1,
        repeats_help="profiled passes over the requests, the pipeline drained between passes; "
        "pass p's request r is marked r<p*requests+r>, so the fit pools the passes per chunk index",
    )
    parser.add_argument("--heads", type=positive_int, default=4, help="query heads (default: 4)")
    parser.add_argument(
        "--kv-heads", type=positive_int, default=2, help="key/value heads, GQA (default: 2)"
    )
    parser.add_argument("--requests", type=positive_int, default=1, help="requests (default: 1)")
    parser.add_argument("--schedule", choices=("cpp", "dcpp", "vpp"), default="cpp")
    parser.add_argument(
        "--dcpp-smooth",
        type=number(float, above=0, high=1, what="a sigma in (0, 1]"),
        default=1.0,
        help="dcpp: smoothing sigma in (0, 1], s = C + sigma (x* - C) (default: 1.0)",
    )
    parser.add_argument(
        "--pin", action="store_true", help="pin rank r to the r-th usable CPU (sched_setaffinity)"
    )
    parser.add_argument("--attention", choices=("dense", "sparse"), default="dense")
    parser.add_argument(
        "--top-k", type=positive_int, default=1024, help="sparse: prefix keys kept (default: 1024)"
    )
    parser.add_argument(
        "--send",
        choices=("blocking", "overlapped"),
        default="blocking",
        help="dist.send after each forward, or dist.isend waited at the end (default: blocking)",
    )
    parser.add_argument(
        "--threads", type=positive_int, default=1, help="intra-op threads per rank (default: 1)"
    )
    parser.add_argument(
        "--warmup",
        type=count,
        default=1,
        help="passes run before the profiler starts, kept out of the trace (default: 1)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="weights and prompts (default: 0)")
    parser.add_argument(
        "--profile-table",
        action="store_true",
        help="instead of a pipeline run, time one layer's attention and whole forward for each "
        "chunk size (--profile-chunks) and prefix k*chunk below --seq-len on this CPU, median of "
        "max(--repeats, 3) calls, and write DIR/latency_table.csv (the generic layout of "
        "docs/latency_tables.md) for `tracereplay ingest`",
    )
    parser.add_argument(
        "--profile-chunks",
        default=None,
        metavar="C,C",
        help="--profile-table: chunk sizes, comma-separated (default: --chunk)",
    )
    parser.add_argument(
        "--out", type=output_folder, required=True, metavar="DIR", help="trace folder"
    )
    add_json_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("torch") is None:
        print(
            "tracereplay workload: PyTorch is not installed; install the CPU wheel "
            "(docs/workload.md): run `scripts/install-torch` in the project folder (a local CPU "
            "wheel when there is one, else PyTorch's CPU index)",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    from pipelines.workload.launch import run_workload

    if args.profile_chunks is not None and not args.profile_table:
        print("tracereplay workload: --profile-chunks goes with --profile-table", file=sys.stderr)
        return ExitCode.BAD_INPUT  # it was ignored without a word
    try:
        cfg = workload_config(args)
    except ValueError as exc:
        print(f"tracereplay workload: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.profile_table:
        return _profile_table(cfg, args)
    paths, wall_s = run_workload(cfg, args.out)
    chunks = (
        f"DCPP chunks of at most {cfg.chunk} tokens (floor {cfg.min_chunk})"
        if cfg.schedule == "dcpp"
        else f"{cfg.chunk}-token chunks"
    )
    if args.json:
        emit_json(
            {"config": cfg.as_dict(), "traces": [str(p) for p in paths], "wall_s": wall_s},
            indent=None,
        )
    else:
        print(
            f"{cfg.model_name} {cfg.schedule} {cfg.send}: {cfg.repeats} x {cfg.requests} x "
            f"{cfg.seq_len} tokens in {chunks} (+{cfg.warmup} warm-up), "
            f"{wall_s:.1f} s wall"
        )
        for p in paths:
            print(f"  {p}")
        print(f"next: tracereplay validate {shown_path(args.out)}")
    return ExitCode.OK


def _profile_table(cfg, args: argparse.Namespace) -> int:
    """`--profile-table`: pipelines.workload.profile_table, one CSV in args.out."""
    import time

    from pipelines.workload.profile_table import measure, write_table

    try:
        chunks = [int(c) for c in (args.profile_chunks or str(cfg.chunk)).split(",")]
    except ValueError:
        print(
            "tracereplay workload: --profile-chunks takes integers, e.g. 256,512", file=sys.stderr
        )
        return ExitCode.BAD_INPUT
    if any(c <= 0 or c > cfg.seq_len for c in chunks):
        print("tracereplay workload: each --profile-chunks size is 1..--seq-len", file=sys.stderr)
        return ExitCode.BAD_INPUT
    start = time.perf_counter()
    rows = measure(cfg, chunks, repeats=max(args.repeats, 3), warmup=args.warmup)
    path = write_table(rows, args.out)
    wall_s = time.perf_counter() - start
    if args.json:
        emit_json({"config": cfg.as_dict(), "table": str(path), "points": len(rows)}, indent=None)
    else:
        print(f"{cfg.model_name}: {len(rows)} points in {wall_s:.1f} s wall -> {shown_path(path)}")
        print(f"next: tracereplay ingest {shown_path(path)} && tracereplay fit")
    return ExitCode.OK
