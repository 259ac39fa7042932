"""`tracereplay simulate`: run one simulated schedule and write its traces.

`single` runs the single-device scheduler of the chunked-prefill reference
(pipelines/sim/single_device.py); the pipeline schedules run the pipeline-parallel simulator
(pipelines.sim.run.simulate). With --out DIR the run is written as torch_npu `*_ascend_pt`
folders (one per rank), a Perfetto/Chrome JSON and/or Kineto traces, ready for
`tracereplay ingest DIR`.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pipelines import schedule_kinds
from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, count, number, output_folder, positive_int, seed
from pipelines.cli._format import duration
from pipelines.cli._json import emit_json
from pipelines.paths import printable, stored_path

if TYPE_CHECKING:  # polars loads when a simulation runs, not when the parser is built
    from pipelines.sim.result import SimResult

SCHEDULES = ("single", *schedule_kinds.NAMES)  # single: one device, no pipeline
FORMATS = ("ascend", "kineto", "chrome")
DEFAULT_FORMATS = "ascend,chrome"
SINGLE_MODEL = "llama3-8b"
PIPELINE_MODEL = "deepseek-v3.1"
PIPELINE_SEQ_LEN = 131072


class ArgumentError(ValueError):
    """A combination of options that cannot be simulated."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="simulate a chunked-prefill schedule and write its traces",
        description=textwrap.fill(
            "Simulate one chunked-prefill run and optionally write it as profiler traces. "
            "'single' is the single-device scheduler of the chunked-prefill reference "
            "(Sarathi-Serve-style): every step gives decode streams one token each first, then "
            "fills the --chunk token budget with prompt chunks (48 streams decoding at 4k "
            "context, a 500-token interactive prompt every "
            "50 ms, --requests long prompts of --seq-len tokens from 0.5 s, Llama-3-8B roofline "
            "on an H100). The other schedules run the pipeline-parallel simulator over --ranks "
            "stages: cpp (fixed chunks), dcpp (dynamic chunk sizes; vLLM-Ascend's rule, "
            "dcpp_sglang / dcpp_vllm_ascend name the rule), vpp (virtual pipeline, "
            "--vp stages per rank), vpp_async (VPP with asynchronous sends), vpp_pack (VPP-Async "
            "with cross-request packing).",
            width=100,
        ),
        epilog=(
            "examples:\n"
            "  tracereplay simulate --schedule single --chunk 2048 --interactive-first --json\n"
            "  tracereplay simulate --schedule vpp --ranks 2 --vp 2 --seq-len 131072 "
            "--chunk 16384 --out data/raw/sim_vpp\n"
            "output with --out DIR:\n"
            "  DIR/sim-<schedule>-rank<r>_<pid>_<stamp>_ascend_pt/  torch_npu text export per "
            "rank (tracereplay ingest DIR)\n"
            "  DIR/kineto/*.pt.trace.json                          Kineto trace per rank\n"
            "  DIR/<schedule>.perfetto.json                        open in ui.perfetto.dev\n"
            "exit codes: 0 ok, 2 bad arguments"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--model",
        default=None,
        help=f"model preset (default: {SINGLE_MODEL} for single, {PIPELINE_MODEL} otherwise; "
        "pipeline presets: deepseek-v3.1, glm-5.2, qwen3-coder-30b-a3b, llama3-8b)",
    )
    parser.add_argument(
        "--schedule",
        choices=SCHEDULES,
        default="cpp",
        help="schedule to simulate (default: cpp)",
    )
    parser.add_argument(
        "--seq-len",
        type=positive_int,
        default=None,
        metavar="TOKENS",
        help="prompt length of each long request in tokens (default: 32768 for single, "
        f"{PIPELINE_SEQ_LEN} otherwise)",
    )
    parser.add_argument(
        "--chunk",
        type=count,
        default=None,
        metavar="TOKENS",
        help="chunk size in tokens; for single the per-step token budget including decodes, 0 "
        "for no chunking; for dcpp the base size the dynamic sizes start from (default: 2048 "
        "for single, 24576 otherwise)",
    )
    parser.add_argument(
        "--ranks",
        type=positive_int,
        default=None,
        metavar="N",
        help="pipeline-parallel ranks (default: 1 for single, which allows only 1; 2 otherwise)",
    )
    parser.add_argument(
        "--vp",
        type=positive_int,
        default=None,
        metavar="N",
        help="virtual stages per rank for vpp* schedules (default: 2 for vpp*, 1 otherwise)",
    )
    parser.add_argument(
        "--requests",
        type=positive_int,
        default=1,
        metavar="N",
        help="number of long requests (default: 1)",
    )
    parser.add_argument(
        "--arrival-gap",
        type=_non_negative,
        default=0.0,
        metavar="MS",
        help="milliseconds between the arrivals of consecutive long requests (default: 0, all "
        "at once; single: 100 ms when 0 and --requests > 1)",
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help="random seed of the noise (default: 0)"
    )
    parser.add_argument(
        "--noise",
        type=_non_negative,
        default=0.0,
        metavar="SIGMA",
        help="sigma of a multiplicative log-normal noise on task durations (default: 0, exact)",
    )
    _add_disturbances(parser)
    parser.add_argument(
        "--cap",
        type=positive_int,
        default=None,
        metavar="TOKENS",
        help="single only: per-request token cap per step (default: none)",
    )
    parser.add_argument(
        "--interactive-first",
        action="store_true",
        help="single only: give the step budget to interactive prompts first (default: arrival "
        "order)",
    )
    parser.add_argument(
        "--tp",
        type=positive_int,
        default=None,
        help="tensor-parallel ranks per stage (default: preset's)",
    )
    parser.add_argument(
        "--comm",
        choices=("preset", "none"),
        default="preset",
        help="pipeline transfers and TP / EP collectives from the hardware preset, or none "
        "(free) (default: preset)",
    )
    parser.add_argument(
        "--collectives",
        choices=("blocking", "overlapped", "none"),
        default="blocking",
        help="TP AllReduce / EP all-to-all per stage call: blocking (after the call's compute), "
        "overlapped (under it) or none (default: blocking; docs/fidelity.md)",
    )
    parser.add_argument(
        "--pack-window",
        type=count,
        default=None,
        metavar="N",
        help="vpp_pack: stage-0 chunks of the next request packed into a drain (default: 4; "
        "0 turns packing off)",
    )
    parser.add_argument(
        "--dcpp-online",
        choices=("on", "off"),
        default="on",
        help="dcpp (vLLM-Ascend rule): online calibration as vLLM-Ascend does by default: the "
        "target step time becomes the measured time of the first chunk, and after 5 executed "
        "chunks a history-aware model t = a x(x+H) + b(x+H) + c is fitted to them and solved "
        "for the next size; off keeps the start-up quadratic fit only (docs/schedules.md §1) "
        "(default: on)",
    )
    parser.add_argument(
        "--best-budget",
        action="store_true",
        help="simulate the schedule at each chunk budget of 8K, 16K, 24K and 32K tokens, print "
        "them and keep the fastest (the paper reports each schedule at its best budget); "
        "ignores --chunk (default: off)",
    )
    parser.add_argument(
        "--pack-requests",
        action="store_true",
        help="a scheduler step carries chunks of several requests: each step's --chunk token "
        "budget goes to the running requests in queue order (8 x 4K prompts in 16K steps: 2 "
        "steps, not 8); under dcpp the step's time budget (the predictor's target) is shared "
        "too, so a long prompt's late chunks shrink as alone; not vpp_pack (default: one request "
        "per step)",
    )
    parser.add_argument(
        "--max-running",
        type=positive_int,
        default=None,
        metavar="N",
        help="with --pack-requests: requests served per step at most, the fixed concurrency "
        "(default: no cap)",
    )
    parser.add_argument(
        "--decode-streams",
        type=count,
        default=0,
        metavar="N",
        help="N running decode streams ride along the prefill steps, one token each per step of "
        "their group (the chunked-prefill reference's decode-first batching under pipeline "
        "parallelism; "
        "pipelines/sim/decode.py); the summary adds their inter-token latency (ITL p50 / p90 / "
        "p99 / max) (default: 0, prefill only as in the paper)",
    )
    parser.add_argument(
        "--decode-context",
        type=count,
        default=None,
        metavar="TOKENS",
        help="with --decode-streams: KV context of each decode stream (default: 4096)",
    )
    parser.add_argument(
        "--decode-groups",
        type=positive_int,
        default=None,
        metavar="G",
        help="micro-batch groups the decode streams are split into, one per step in turn "
        "(vLLM's pp virtual engines); a step waits for its group's previous token (default: the "
        "fewest the schedule's step order allows, from --ranks up)",
    )
    parser.add_argument(
        "--length-mix",
        type=positive_int,
        default=None,
        metavar="N",
        help="N requests with GSM8K-like prompt lengths (log-normal, median 1,024 tokens, cut "
        "to 256-4,096; pipelines/sim/batching.py) queued at t=0, drawn from --seed; replaces "
        "--requests and --seq-len (default: off)",
    )
    parser.add_argument(
        "--trace-detail",
        choices=("tasks", "layers"),
        default="tasks",
        help="tasks: one kernel per stage call, one ProfilerStep for the run; layers: per-layer "
        "kernels with torch_npu names (FlashAttentionScore, MatMulV3, GroupedMatmul, RmsNorm, "
        "SwiGlu ...), host cpu_ops that launch them ahead of the device with torch_to_npu flows, "
        "one ProfilerStep per scheduler step (about 15x the trace size; docs/sim_traces.md) "
        "(default: tasks)",
    )
    parser.add_argument(
        "--tp-ranks",
        action="store_true",
        help="write every tensor-parallel rank as its own rank (rank = stage x TP + t: TP8 x PP2 "
        "writes 16 rank folders) instead of one rank per pipeline stage (default: off)",
    )
    parser.add_argument(
        "--out",
        type=output_folder,
        default=None,
        metavar="DIR",
        help="write the traces under DIR (default: write nothing, print the summary)",
    )
    parser.add_argument(
        "--collected-at",
        type=_collected_at,
        default=None,
        metavar="WHEN",
        help="when the run was profiled, UTC, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]: the traces' "
        "clock and folder stamps start there and `ingest` files the run under that date, so "
        "runs written night by night form a history for `tracereplay regressions` (default: "
        "2026-01-01T00:00)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a run this command wrote earlier into --out (default: refuse, since "
        "ingesting the folder would merge both runs' ranks)",
    )
    parser.add_argument(
        "--format",
        default=DEFAULT_FORMATS,
        metavar="LIST",
        help="comma-separated trace formats to write with --out: ascend (torch_npu *_ascend_pt "
        "folders), kineto (one .pt.trace.json per rank), chrome (one Perfetto JSON) "
        f"(default: {DEFAULT_FORMATS})",
    )
    add_json_option(parser)
    parser.set_defaults(func=run)


DEFAULT_OUTLIER_FACTOR = 2.0


_non_negative = number(float, low=0, what="a number >= 0")
_positive_float = number(float, above=0, what="a number > 0")
_above_minus_100 = number(float, above=-100, what="a percentage > -100")
_fraction = number(float, low=0, high=1, what="a fraction 0-1")
_correlation = number(float, above=-1, below=1, what="a correlation in (-1, 1)")


def _add_disturbances(parser: argparse.ArgumentParser) -> None:
    """The disturbances real runs show beyond per-task noise (pipelines.sim.disturbance)."""
    group = parser.add_argument_group(
        "disturbances (pipeline schedules; docs/nightly.md rehearses a nightly history with them)"
    )
    group.add_argument(
        "--run-noise",
        type=_non_negative,
        default=0.0,
        metavar="SIGMA",
        help="run-to-run noise: every task of the run x exp(SIGMA z), one z per run drawn from "
        "--seed (0.02: the 2 %% nightly spread of real benchmarks; per-task --noise averages out "
        "over a run's tasks) (default: 0)",
    )
    group.add_argument(
        "--slowdown",
        type=_above_minus_100,
        default=0.0,
        metavar="PCT",
        help="every compute task PCT %% slower from --slowdown-from on: a regression to inject "
        "(communication unchanged, so TTFT grows by compute's share) (default: 0)",
    )
    group.add_argument(
        "--run-slowdown",
        type=_above_minus_100,
        default=0.0,
        metavar="PCT",
        help="every task of the run, communication included, PCT %% slower: TTFT grows by PCT "
        "%% (a slower node, a busy fabric) (default: 0)",
    )
    group.add_argument(
        "--slowdown-from",
        type=_fraction,
        default=0.0,
        metavar="FRAC",
        help="where the slowdown starts, as a fraction of each stage's chunk sequence: 0 the "
        "whole run, 0.5 a throttle step from mid-run (default: 0)",
    )
    group.add_argument(
        "--ar-rho",
        type=_correlation,
        default=0.0,
        metavar="RHO",
        help="AR(1) correlation of the compute tasks' --noise over each stage's chunk sequence, "
        "in (-1, 1) (default: 0, independent)",
    )
    group.add_argument(
        "--outlier-chunk",
        type=count,
        default=None,
        metavar="K",
        help="chunk K of every request takes --outlier-factor x its time on every stage "
        "(a slow kernel, an HCCL retry) (default: none)",
    )
    group.add_argument(
        "--outlier-factor",
        type=_positive_float,
        default=DEFAULT_OUTLIER_FACTOR,
        metavar="F",
        help="with --outlier-chunk: the factor (default: 2)",
    )


def disturbance_from_args(args: argparse.Namespace):
    """The Disturbance the options ask for, or None (then the simulator draws what it always
    did); ArgumentError for values it cannot take."""
    from pipelines.sim.disturbance import Disturbance

    if args.outlier_factor != DEFAULT_OUTLIER_FACTOR and args.outlier_chunk is None:
        raise ArgumentError("--outlier-factor needs --outlier-chunk K (the chunk it slows)")
    if args.slowdown_from and not args.slowdown:
        raise ArgumentError("--slowdown-from needs --slowdown PCT (the slowdown it places)")
    asked = args.run_noise or args.slowdown or args.run_slowdown or args.ar_rho
    asked = asked or args.outlier_chunk is not None
    if not asked:
        return None
    if args.ar_rho and args.noise <= 0:
        raise ArgumentError("--ar-rho correlates the per-task --noise: give --noise > 0 too")
    for flag, pct in (("--slowdown", args.slowdown), ("--run-slowdown", args.run_slowdown)):
        if pct <= -100:
            raise ArgumentError(f"{flag} must be above -100 %, got {pct}")
    if args.outlier_chunk is not None and args.outlier_chunk < 0:
        raise ArgumentError(f"--outlier-chunk must be >= 0, got {args.outlier_chunk}")
    try:
        return Disturbance(
            outlier_k=args.outlier_chunk,
            outlier_factor=args.outlier_factor if args.outlier_chunk is not None else 1.0,
            ar_rho=args.ar_rho,
            throttle_factor=1 + args.slowdown / 100,
            throttle_from=args.slowdown_from,
            run_sigma=args.run_noise,
            run_factor=1 + args.run_slowdown / 100,
        )
    except ValueError as exc:
        raise ArgumentError(f"disturbance: {exc}") from exc


def parse_formats(text: str) -> list[str]:
    """'ascend,chrome' -> ['ascend', 'chrome']; raises ArgumentError on unknown names."""
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = sorted(set(names) - set(FORMATS))
    if not names or unknown:
        raise ArgumentError(
            f"--format: unknown format(s) {unknown or [text]}; choose from {', '.join(FORMATS)}"
        )
    return list(dict.fromkeys(names))


def _check_common(args: argparse.Namespace) -> None:
    positive = {"--requests": args.requests, "--seq-len": args.seq_len, "--ranks": args.ranks}
    positive["--vp"] = args.vp
    positive["--tp"] = getattr(args, "tp", None)
    for flag, value in positive.items():
        if value is not None and value < 1:
            raise ArgumentError(f"{flag} must be at least 1, got {value}")
    if args.chunk is not None and args.chunk < 0:
        raise ArgumentError(f"--chunk must be >= 0, got {args.chunk}")
    if args.arrival_gap < 0:
        raise ArgumentError(f"--arrival-gap must be >= 0, got {args.arrival_gap}")
    if args.noise < 0:
        raise ArgumentError(f"--noise must be >= 0, got {args.noise}")
    if args.cap is not None and args.cap < 1:
        raise ArgumentError(f"--cap must be at least 1, got {args.cap}")


def simulate_single_from_args(args: argparse.Namespace) -> tuple[SimResult, dict[str, Any]]:
    """The single-device run the options describe, and its chunked-prefill reference metrics."""
    from pipelines.sim.roofline import MODELS
    from pipelines.sim.single_device import Policy, Workload, seed_metrics, simulate_single

    if disturbance_from_args(args) is not None:
        raise ArgumentError(
            "--run-noise, --slowdown, --run-slowdown, --ar-rho and --outlier-chunk apply to the "
            "pipeline schedules, not --schedule single"
        )

    model_name = SINGLE_MODEL if args.model is None else args.model
    if model_name not in MODELS:
        raise ArgumentError(
            f"--model {model_name!r} has no single-device roofline; choose from {sorted(MODELS)}"
        )
    if args.ranks not in (None, 1):
        raise ArgumentError("--schedule single runs on one device: --ranks must be 1")
    if args.decode_streams or args.decode_groups is not None or args.decode_context is not None:
        raise ArgumentError(
            "--decode-* apply to the pipeline schedules; --schedule single always runs the "
            "chunked-prefill reference's 48 decode streams at 4K context"
        )
    if args.vp not in (None, 1):
        raise ArgumentError("--schedule single has no virtual stages: --vp must be 1")
    wl = Workload()
    budget = 2048 if args.chunk is None else (args.chunk or None)
    if budget is not None and budget <= wl.decoders:
        raise ArgumentError(
            f"--chunk {budget} leaves no room for prompts after {wl.decoders} decode tokens"
        )
    gap_ns = round(args.arrival_gap * 1e6) or wl.long_gap_ns
    workload = Workload(
        long_tokens=args.seq_len or wl.long_tokens, long_count=args.requests, long_gap_ns=gap_ns
    )
    name = "no chunking" if budget is None else f"budget {budget}"
    if args.cap:
        name += f", cap {args.cap}/request"
    if args.interactive_first:
        name += ", interactive first"
    policy = Policy(name, budget, cap=args.cap, interactive_first=args.interactive_first)
    run = simulate_single(
        policy, workload, model=MODELS[model_name], noise=args.noise, seed=args.seed
    )
    extra: dict[str, Any] = {"scheduling_steps": run.steps.height, "policy": policy.name}
    return run.result, extra | seed_metrics(run).as_dict()


def simulate_pipeline_from_args(args: argparse.Namespace) -> SimResult:
    """The pipeline-parallel run the options describe (pipelines.sim.run.simulate): --requests
    prompts of --seq-len tokens arriving --arrival-gap apart from t=0."""
    if args.cap is not None or args.interactive_first:
        raise ArgumentError("--cap and --interactive-first apply to --schedule single only")
    vp = args.vp if args.vp is not None else schedule_kinds.default_vp(args.schedule)
    if not schedule_kinds.is_virtual(args.schedule) and vp != 1:
        raise ArgumentError(f"--vp {vp} needs a vpp* schedule, not {args.schedule}")
    if args.chunk == 0:
        raise ArgumentError("--chunk 0 (no chunking) applies to --schedule single only")
    import polars as pl

    from pipelines.sim import presets
    from pipelines.sim import run as sim_run

    model = PIPELINE_MODEL if args.model is None else args.model
    if model not in presets.PRESET_NAMES:
        raise ArgumentError(
            f"--model {model!r} is not a simulator preset; choose from "
            f"{', '.join(presets.PRESET_NAMES)}"
        )
    gap_ns = round(args.arrival_gap * 1e6)
    seq_len = args.seq_len or PIPELINE_SEQ_LEN
    if args.length_mix is not None:
        from pipelines.sim.batching import length_mix

        if args.length_mix < 1:
            raise ArgumentError(f"--length-mix must be at least 1, got {args.length_mix}")
        requests = length_mix(args.length_mix, seed=args.seed)
    else:
        requests = pl.DataFrame(
            {
                "request_id": [f"req-{i}" for i in range(args.requests)],
                "arrival_ns": [i * gap_ns for i in range(args.requests)],
                "prompt_tokens": [seq_len] * args.requests,
            }
        )
    if args.max_running is not None and (args.max_running < 1 or not args.pack_requests):
        raise ArgumentError("--max-running needs --pack-requests and a value of at least 1")
    options: dict[str, Any] = {"model": model, "pp": args.ranks or 2, "vp": vp, "tp": args.tp}
    if args.decode_streams:
        from pipelines.sim.decode import DecodeLoad

        try:
            context = DecodeLoad.context if args.decode_context is None else args.decode_context
            options["decode"] = DecodeLoad(args.decode_streams, context, args.decode_groups)
        except ValueError as exc:
            raise ArgumentError(f"--decode-*: {exc}") from exc
    elif args.decode_groups is not None or args.decode_context is not None:
        raise ArgumentError("--decode-groups and --decode-context need --decode-streams")
    if args.pack_requests:
        options |= {"pack_requests": True, "max_running": args.max_running}
    kind = schedule_kinds.BY_NAME.get(args.schedule)
    if (
        kind is not None
        and kind.base == "dcpp"
        and kind.dcpp_rule in (None, schedule_kinds.DEFAULT_DCPP_RULE)
    ):
        from pipelines.sim.chunking import DcppConfig

        options["dcpp"] = DcppConfig(online=args.dcpp_online == "on")
    if args.chunk is not None:
        options["chunk_size"] = args.chunk
    disturbance = disturbance_from_args(args)
    if disturbance is not None:
        options["disturbance"] = disturbance
    if args.pack_window is not None:
        options["pack_window"] = args.pack_window
    if args.comm == "none":
        options["comm"] = None
    elif args.collectives == "none":
        options["collectives"] = None
    elif args.collectives == "overlapped" and model in presets.MODELS:
        options["collectives"] = presets.collective_model(model, tp=args.tp, blocking=False)
    try:
        if args.best_budget:
            from pipelines.sim.budget import budget_sweep

            table, result = budget_sweep(
                requests, args.schedule, noise=args.noise, seed=args.seed, **options
            )
            result.meta["budget_sweep"] = table.to_dicts()
        else:
            result = sim_run.simulate(
                requests, args.schedule, noise=args.noise, seed=args.seed, **options
            )
    except ValueError as exc:
        raise ArgumentError(str(exc)) from exc
    link = presets.comm_model(model, result.meta.get("hardware"), result.meta.get("tp"))
    result.meta.setdefault("bytes_per_token", float(link.bytes_per_token))
    return result


def _collected_at(text: str) -> int:
    """--collected-at as the epoch (ns) of the simulated t = 0."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date: YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (UTC)"
        ) from None
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return int(when.replace(tzinfo=UTC).timestamp()) * 1_000_000_000


def _check_outlier_chunk(k: int | None, tasks: Any) -> None:
    """--outlier-chunk K past the run's last chunk slowed nothing and exited 0: refused."""
    if k is None:
        return
    last = int(tasks["chunk_idx"].max())
    if k > last:
        raise ArgumentError(
            f"--outlier-chunk {k}: the run's chunks are 0..{last}, so it would slow nothing"
        )


def run(args: argparse.Namespace) -> int:
    from pipelines.sim.outputs import (
        OutputFolderError,
        check_out,
        remove_outputs,
        summary,
        write_outputs,
    )

    try:
        _check_common(args)
        formats = parse_formats(args.format)
        stale = check_out(args.out, args.overwrite) if args.out is not None else []
        if args.tp_ranks and args.schedule == "single":
            raise ArgumentError("--tp-ranks applies to the pipeline schedules, not single")
        if args.schedule == "single":
            result, extra = simulate_single_from_args(args)
        else:
            result, extra = simulate_pipeline_from_args(args), {}
            _check_outlier_chunk(args.outlier_chunk, result.tasks)
    except (ArgumentError, OutputFolderError) as exc:
        print(f"tracereplay simulate: error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.collected_at is not None:
        result = replace(result, meta=result.meta | {"epoch_ns": args.collected_at})
    written = []
    if args.out is not None:
        remove_outputs(stale)
        written = write_outputs(result, args.out, formats, args.trace_detail, args.tp_ranks)
    report = summary(result, extra)
    report["written"] = [str(p) for p in written]
    if args.json:
        emit_json(report, indent=2)
    else:
        _print_summary(report)
    return ExitCode.OK


def _print_summary(report: dict[str, Any]) -> None:
    sweep = report.get("budget_sweep")
    if sweep:
        print(f"{'budget':>8}  {'makespan':>10}  {'steps':>5}  {'TTFT p50':>10}  {'TTFT p99':>10}")
        for row in sweep:
            mark = "  best" if row["best"] else ""
            print(
                f"{row['chunk_size']:>8}  {row['makespan_ns'] / 1e9:>8.3f} s  "
                f"{row['scheduling_steps']:>5}  {row['ttft_p50_ns'] / 1e9:>8.3f} s  "
                f"{row['ttft_p99_ns'] / 1e9:>8.3f} s{mark}"
            )
    rows = []
    for key in (k for k in report if k not in ("written", "budget_sweep")):
        value = report[key]
        if key.endswith("_ns") and isinstance(value, int | float) and not isinstance(value, bool):
            rows.append((key[: -len("_ns")], duration(value, 2)))  # --json keeps the ns
        else:
            rows.append((key, f"{value:.6g}" if isinstance(value, float) else str(value)))
    width = max(len(label) for label, _ in rows)
    for label, text in rows:
        print(f"{label:<{width}}  {text}")
    for path in report["written"]:
        print(f"wrote {printable(stored_path(path))}")
