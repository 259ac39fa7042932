"""Public API of the pipeline-parallel chunked-prefill simulator.

    simulate(requests, schedule, ...) -> SimResult        one run
    simulate_batch(requests, schedule, costs=[...], ...)  one schedule, many cost models / seeds,
                                                          evaluated together (vectorised engine)

`requests` is a prompt length (one request at t=0), a list of prompt lengths (queued
back-to-back at t=0) or a Polars frame with arrival_ns, prompt_tokens and optionally request_id
(a trace). Schedules: cpp, dcpp (rule from `dcpp`, default vLLM-Ascend; "dcpp_sglang" and
"dcpp_vllm_ascend" select one), vpp (blocking transfers), vpp_async (overlapped transfers),
vpp_pack (overlapped transfers and cross-request packing of `pack_window` chunks; None: Algorithm
2's estimate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl

from pipelines import schedule_kinds
from pipelines.sim import presets
from pipelines.sim.batching import Piece, pack_dcpp_steps, pack_steps, packed_stage_ns
from pipelines.sim.chunking import (
    DcppConfig,
    StageLatency,
    dynamic_chunks,
    fixed_chunks,
    profile,
)
from pipelines.sim.comm import CollectiveModel, CommModel
from pipelines.sim.cost_models import StageCost
from pipelines.sim.decode import DecodeLoad, attach, decode_ns, itl_metrics
from pipelines.sim.disturbance import Disturbance, disturbed_durations
from pipelines.sim.event_graph import evaluate
from pipelines.sim.layout import StageLayout, fold_back_layout
from pipelines.sim.result import REQUEST_SCHEMA, SimResult
from pipelines.sim.task_order import (
    COMPUTE,
    DEFAULT_PACK_WINDOW,
    SCHEDULES,
    SEND,
    TRANSFER,
    ChunkedRequest,
    Plan,
    build_plan,
    estimate_pack_window,
    rank_orders,
)
from pipelines.sim.timeline import request_table, task_table

RequestsLike = int | Sequence[int] | pl.DataFrame
_ALIASES = {s.name: (s.base, s.dcpp_rule) for s in schedule_kinds.ALL if s.dcpp_rule}
BATCH_REQUEST = "batch"
"""request_id of a packed run's steps in the task table (prepare(pack_requests=True))."""


def requests_frame(requests: RequestsLike) -> pl.DataFrame:
    """Normalise `requests` to request_id, arrival_ns, prompt_tokens (sorted by arrival)."""
    if isinstance(requests, pl.DataFrame):
        frame = requests
        if "request_id" not in frame.columns:
            frame = frame.with_row_index("request_id").with_columns(
                pl.format("req-{}", pl.col("request_id"))
            )
    else:
        lengths = [requests] if isinstance(requests, int) else list(requests)
        frame = pl.DataFrame(
            {
                "request_id": [f"req-{i}" for i in range(len(lengths))],
                "arrival_ns": [0] * len(lengths),
                "prompt_tokens": lengths,
            }
        )
    frame = frame.select(
        pl.col("request_id").cast(pl.String),
        pl.col("arrival_ns").cast(pl.Int64),
        pl.col("prompt_tokens").cast(pl.Int64),
    )
    if frame.height == 0 or frame["prompt_tokens"].min() < 1:
        raise ValueError("need at least one request with a positive prompt length")
    return frame.sort("arrival_ns", maintain_order=True)


def _resolve_schedule(schedule: str, dcpp: DcppConfig | None) -> tuple[str, DcppConfig | None]:
    if schedule in _ALIASES:
        base, rule = _ALIASES[schedule]
        return base, replace(dcpp or DcppConfig(), rule=rule)
    if schedule not in SCHEDULES:
        known = ", ".join((*SCHEDULES, *_ALIASES))
        raise ValueError(f"unknown schedule {schedule!r}; known: {known}")
    return schedule, (dcpp or DcppConfig()) if schedule == "dcpp" else None


def _resolve_cost(model: str | StageCost, hardware: str | None, tp: int | None) -> StageCost:
    if isinstance(model, str):
        return presets.cost_model(model, hardware, tp)
    if not isinstance(model, StageCost):
        raise TypeError("model must be a preset name or a StageCost")
    return model


def _resolve_comm(
    comm: CommModel | str | None, model: str | StageCost, hardware, tp, mode: str
) -> CommModel | None:
    if comm is None:
        return None
    if isinstance(comm, str):
        if comm != "preset":
            raise ValueError("comm must be a CommModel, None or 'preset'")
        if not isinstance(model, str):
            return None  # a custom cost model brings no link figures: free transfers
        comm = presets.comm_model(model, hardware, tp)
    return comm.with_mode(mode)  # type: ignore[arg-type]


def _resolve_collectives(
    collectives: CollectiveModel | str | None, model: str | StageCost, hardware, tp
) -> CollectiveModel | None:
    if collectives is None or isinstance(collectives, CollectiveModel):
        return collectives
    if collectives != "preset":
        raise ValueError("collectives must be a CollectiveModel, None or 'preset'")
    if not isinstance(model, str):
        return None  # a custom cost model brings no collective figures
    return presets.collective_model(model, hardware, tp)


def collective_parts(
    plan: Plan, collectives: CollectiveModel | None, layout: StageLayout | None = None
) -> dict[str, np.ndarray]:
    """Per node, the TP ("allreduce") and EP ("alltoall") collective time (float ns) of its stage
    call; zero off compute nodes, empty without a collective model."""
    if collectives is None:
        return {}
    compute = plan.kind == COMPUTE
    ranges = np.array((layout or plan.layout).layer_ranges, dtype=np.int64)[plan.stage[compute]]
    out = {}
    for kind, ns in collectives.parts_ns(plan.tokens[compute], ranges[:, 0], ranges[:, 1]).items():
        full = np.zeros(plan.size, dtype=np.float64)
        full[compute] = ns
        out[kind] = full
    return out


def stage_durations(
    plan: Plan,
    cost: StageCost,
    comm: CommModel | None,
    layout: StageLayout | None = None,
    collectives: CollectiveModel | None = None,
    steps: list[list[Piece]] | None = None,
) -> np.ndarray:
    """Noise-free duration (float ns) of every node of `plan`; `layout` (same pp and vp) gives
    the layer ranges when `cost` is another model than the one the plan was built for. Blocking
    collectives add to their call; overlapped ones only where they outlast its compute. With
    `steps` (packed requests: chunk k of the plan is step k) a call costs its pieces
    (batching.packed_stage_ns)."""
    dur = np.zeros(plan.size, dtype=np.float64)
    compute = plan.kind == COMPUTE
    ranges = np.array((layout or plan.layout).layer_ranges, dtype=np.int64)
    if steps is not None:
        lo_hi = ranges[plan.stage[compute]]
        dur[compute] = packed_stage_ns(cost, steps, plan.chunk[compute], lo_hi[:, 0], lo_hi[:, 1])
    else:
        keys = np.column_stack(
            [plan.tokens[compute], plan.prefix[compute], ranges[plan.stage[compute]]]
        )
        unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        times = cost.stage_ns(unique[:, 0], unique[:, 1], unique[:, 2], unique[:, 3])
        dur[compute] = np.asarray(times, dtype=np.float64)[inverse.ravel()]
    dur[compute] += np.where(plan.pays_overhead[compute], cost.call_overhead_ns, 0.0)
    parts = collective_parts(plan, collectives, layout)
    if parts:
        total = sum(parts.values())
        dur = dur + total if collectives.blocking else np.maximum(dur, total)  # type: ignore[union-attr]
    hops = (plan.kind == SEND) | (plan.kind == TRANSFER)
    if comm is not None and hops.any():
        dur[hops] = comm.hop_ns(plan.tokens[hops])
    return dur


def _noisy(dur: np.ndarray, noise: float, seed: int, batch: int | None = None) -> np.ndarray:
    """Round to integer ns after a multiplicative lognormal factor exp(noise z), z ~ N(0, 1)."""
    if noise <= 0:
        base = np.rint(dur).astype(np.int64)
        return base if batch is None else np.repeat(base[:, None], batch, axis=1)
    rng = np.random.default_rng(seed)
    shape = dur.shape if batch is None else (*dur.shape, batch)
    factor = np.exp(noise * rng.standard_normal(shape))
    scaled = dur * factor if batch is None else dur[:, None] * factor
    return np.rint(scaled).astype(np.int64)


HOST_FORMS = ("per_token", "quadratic")
"""How a request's host set-up grows with its prompt (docs/fidelity.md §5): `per_token`
h x n; `quadratic` h x n x n / presets.HOST_REFERENCE_TOKENS, the same time at the reference
length (table 2's 512K, where h is calibrated) and (n / 512K)^2 of it elsewhere. A study form
"power:P" (P >= 0) is h x n x (n / 512K)^(P - 1): per_token is power:1, quadratic power:2
(fidelity_studies' host-exponent sweep; the paper gives no form)."""


def host_exponent(form: str) -> float:
    """The power P of n a host form's set-up grows with (`HOST_FORMS`, or "power:P")."""
    if form in HOST_FORMS:
        return 1.0 if form == "per_token" else 2.0
    head, _, value = form.partition(":")
    try:
        power = float(value) if head == "power" else float("nan")
    except ValueError:
        power = float("nan")
    if not (0.0 <= power < 16.0):
        raise ValueError(
            f"host form must be one of {', '.join(HOST_FORMS)} or power:P (0 <= P < 16), "
            f"got {form!r}"
        )
    return power


def host_ready_ns(
    frame: pl.DataFrame, host_ns_per_token: float, form: str = "per_token"
) -> np.ndarray:
    """When each request of `frame` (arrival order) may start its first chunk: one host thread
    sets requests up in arrival order while the devices run earlier requests:
    ready_i = max(arrival_i, ready_{i-1}) + set-up_i, set-up_i = h x tokens_i (`form`
    per_token), h x tokens_i^2 / presets.HOST_REFERENCE_TOKENS (quadratic) or
    h x tokens_i x (tokens_i / presets.HOST_REFERENCE_TOKENS)^(P - 1) (power:P)."""
    power = host_exponent(form)
    arrival = frame["arrival_ns"].to_numpy().astype(np.int64)
    if host_ns_per_token <= 0:
        return arrival
    tokens = frame["prompt_tokens"].to_numpy().astype(np.float64)
    if power != 1.0:
        tokens = tokens * (tokens / presets.HOST_REFERENCE_TOKENS) ** (power - 1.0)
    prep = np.rint(host_ns_per_token * tokens).astype(np.int64)
    ready = np.empty_like(arrival)
    last = np.iinfo(np.int64).min
    for i in range(len(arrival)):
        last = max(int(arrival[i]), last) + int(prep[i])
        ready[i] = last
    return ready


def packed_step_ready(ready: np.ndarray, request_steps: Sequence[Sequence[Any]]) -> np.ndarray:
    """When each packed step may start: once the host has set up every request it carries a
    piece of (`ready`, host_ready_ns, by request index; `request_steps`, prepare's (request
    index, tokens, prefix) pieces per step). A step never waits for a request it does not
    carry, as a scheduler adds a request to the running batch once it is set up."""
    out = np.empty(len(request_steps), dtype=np.int64)
    for k, step in enumerate(request_steps):
        out[k] = max(int(ready[int(piece[0])]) for piece in step)
    return np.maximum.accumulate(out)


def _resolve_host(host: float | str | None, model: str | StageCost, hardware: str | None) -> float:
    if host is None:
        return 0.0
    if isinstance(host, str):
        if host != "preset":
            raise ValueError("host_ns_per_token must be a number, None or 'preset'")
        return presets.host_ns_per_token(model, hardware) if isinstance(model, str) else 0.0
    if not np.isfinite(host) or host < 0:
        raise ValueError("host_ns_per_token must be finite and >= 0")
    return float(host)


def _release(plan: Plan, ready: np.ndarray | None = None) -> np.ndarray:
    arrivals = np.array([r.arrival_ns for r in plan.requests], dtype=np.int64)
    if ready is not None:
        arrivals = np.maximum(arrivals, np.asarray(ready, dtype=np.int64))
    rel = plan.release_request
    return np.where(rel >= 0, arrivals[np.maximum(rel, 0)], 0)


def _stage0_latency(
    cost: StageCost, layout: StageLayout, collectives: CollectiveModel | None
) -> StageLatency:
    """Stage-0 step time as DCPP's predictor measures it: compute, call overhead and the
    blocking collectives of the call."""
    lo, hi = layout.layer_ranges[0]

    def stage0(tokens: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        n = len(tokens)
        lo_, hi_ = np.full(n, lo), np.full(n, hi)
        ns = cost.stage_ns(tokens, prefix, lo_, hi_) + cost.call_overhead_ns
        if collectives is not None and collectives.blocking:
            ns = ns + sum(collectives.parts_ns(tokens, lo_, hi_).values())
        return ns

    return stage0


def _chunk_requests(
    frame: pl.DataFrame,
    base: str,
    chunk_size: int,
    dcpp: DcppConfig | None,
    cost: StageCost,
    layout: StageLayout,
    collectives: CollectiveModel | None = None,
) -> list[ChunkedRequest]:
    stage0 = _stage0_latency(cost, layout, collectives)
    out = []
    for rid, arrival, prompt in frame.iter_rows():
        if base == "dcpp":
            chunks = dynamic_chunks(prompt, chunk_size, stage0, dcpp or DcppConfig())
        else:
            chunks = fixed_chunks(prompt, chunk_size)
        out.append(ChunkedRequest(rid, arrival, tuple(chunks)))
    return out


def _pack_windows(
    requests: list[ChunkedRequest],
    layout: StageLayout,
    cost: StageCost,
    comm: CommModel | None,
    pack_window: int | None,
    reorder: bool,
    collectives: CollectiveModel | None = None,
) -> list[int]:
    """Per request boundary, how many stage-0 tasks of the next request are packed; a boundary
    is packed only if the next request has arrived by the time the drain starts (estimated by
    a first pass without packing)."""
    if len(requests) < 2:
        return []
    if layout.ranks[-1] != layout.ranks[0]:
        return [0] * (len(requests) - 1)  # odd vp: no drain window on rank 0
    orders = rank_orders(requests, layout, reorder=reorder)
    plain = build_plan(requests, layout, orders, comm and comm.mode)
    dur = stage_durations(plain, cost, comm, collectives=collectives)
    _, end = evaluate(plain.graph, np.rint(dur).astype(np.int64), _release(plain))
    first_rank = layout.ranks[0]
    compute = plain.kind == COMPUTE
    windows = []
    last = layout.num_stages - 1
    for r in range(len(requests) - 1):
        on_rank = compute & (plain.rank == first_rank) & (plain.request == r)
        ends = np.sort(end[on_rank])
        drain_start = ends[-2] if len(ends) > 1 else ends[-1]
        if requests[r + 1].arrival_ns > drain_start:
            windows.append(0)
            continue
        if pack_window is not None:
            windows.append(pack_window)
            continue
        req = requests[r]
        n = len(req.chunks)
        sel = compute & (plain.request == r)
        k_last = sel & (plain.chunk == n - 1)
        middle = k_last & (plain.stage > 0) & (plain.stage < last)
        drain = float(dur[middle].sum()) + (
            float(
                dur[(plain.kind != COMPUTE) & (plain.request == r) & (plain.chunk == n - 1)].sum()
            )
        )
        exit_prev = float(dur[sel & (plain.chunk == n - 2) & (plain.stage == last)].sum())
        entry = dur[compute & (plain.request == r + 1) & (plain.stage == 0)]
        windows.append(estimate_pack_window(drain, exit_prev, entry.tolist()))
    return windows


def prepare(
    requests: RequestsLike,
    schedule: str = "cpp",
    *,
    model: str | StageCost = "deepseek-v3.1",
    hardware: str | None = None,
    tp: int | None = None,
    chunk_size: int = 24576,
    pp: int = 2,
    vp: int | None = None,
    layer_split: Sequence[int] | None = None,
    comm: CommModel | str | None = "preset",
    comm_mode: str | None = None,
    pack_window: int | None = DEFAULT_PACK_WINDOW,
    dcpp: DcppConfig | None = None,
    reorder: bool | None = None,
    collectives: CollectiveModel | str | None = "preset",
    pack_requests: bool = False,
    max_running: int | None = None,
    decode: DecodeLoad | None = None,
) -> tuple[Plan, np.ndarray, dict[str, Any], StageCost, CommModel | None, CollectiveModel | None]:
    """Chunk, lay out and compile a run: (plan, noise-free durations, meta, cost, comm,
    collectives). `pack_requests`: a scheduler step carries chunks of several requests
    (batching.pack_steps with budget `chunk_size`, at most `max_running` requests per step); the
    plan then runs one batch whose chunk k is step k, and meta["request_steps"] lists the steps'
    (request index, tokens, prefix) pieces. `decode`: decode streams ride along the steps
    (pipelines.sim.decode); meta["decode_plan"] says where."""
    base, dcpp = _resolve_schedule(schedule, dcpp)
    if pack_requests and schedule_kinds.packs(base):
        raise ValueError("vpp_pack packs requests into drain windows: not with packed steps")
    is_vpp = schedule_kinds.is_virtual(base)
    vp = vp if vp is not None else schedule_kinds.default_vp(base)
    if not is_vpp and vp != 1:
        raise ValueError(f"{base} runs one stage per rank: vp must be 1")
    cost = _resolve_cost(model, hardware, tp)
    mode = comm_mode or ("async" if schedule_kinds.is_async(base) else "blocking")
    comm_model = _resolve_comm(comm, model, hardware, tp, mode)
    coll = _resolve_collectives(collectives, model, hardware, tp) if comm is not None else None
    layout = fold_back_layout(cost.num_layers, pp, vp, layer_split)
    frame = requests_frame(requests)
    prompts = frame["prompt_tokens"].to_list()
    steps = None
    if pack_requests and base == "dcpp":
        cfg = dcpp or DcppConfig()
        fit = profile(_stage0_latency(cost, layout, coll), cfg.rule, chunk_size)
        steps = pack_dcpp_steps(prompts, chunk_size, fit, cfg, max_running)
        dcpp = replace(cfg, online=False)  # packed steps use the profiled predictor only
    elif pack_requests:
        steps = pack_steps(prompts, chunk_size, max_running)
    if steps is not None:
        tokens = tuple(sum(piece[1] for piece in step) for step in steps)
        chunked = [ChunkedRequest(BATCH_REQUEST, int(frame["arrival_ns"].max()), tokens)]
    else:
        chunked = _chunk_requests(frame, base, chunk_size, dcpp, cost, layout, coll)
    reorder = reorder if reorder is not None else schedule_kinds.is_async(base)
    windows = (
        _pack_windows(chunked, layout, cost, comm_model, pack_window, reorder, coll)
        if base == "vpp_pack"
        else []
    )
    orders = rank_orders(chunked, layout, windows, reorder)
    plan = build_plan(chunked, layout, orders, comm_model and comm_model.mode)
    decode_plan = None
    if decode is not None:
        plan, decode_plan = attach(plan, orders, decode)
    dur = stage_durations(plan, cost, comm_model, collectives=coll, steps=steps)
    if decode_plan is not None:
        ranges = np.array(layout.layer_ranges, dtype=np.int64)
        dur = dur + decode_ns(plan, decode_plan, cost, decode, ranges)
    model_name = model if isinstance(model, str) else getattr(model, "name", type(model).__name__)
    meta: dict[str, Any] = {
        "model": model_name,
        "schedule": base,
        "chunk_size": chunk_size,
        "seq_len": int(frame["prompt_tokens"].max()),
        "pp": pp,
        "vp": vp,
        "tp": tp
        if tp is not None
        else (presets.default_tp(model) if isinstance(model, str) else 1),
        "hardware": hardware
        or (presets.default_hardware(model) if isinstance(model, str) else "custom"),
        "attention": presets.attention_kind(model) if isinstance(model, str) else None,
        "comm_mode": comm_model.mode if comm_model is not None else "none",
        "collectives": "none" if coll is None else ("blocking" if coll.blocking else "overlapped"),
        "dcpp_rule": dcpp.rule if dcpp is not None else None,
        "dcpp_online": dcpp.online if dcpp is not None else None,
        "pack_windows": windows,
        "reorder": reorder,
        "layer_ranges": [list(r) for r in layout.layer_ranges],
        "stage_ranks": list(layout.ranks),
        "source": "sim",
    }
    if steps is not None:
        meta["request_steps"] = [[list(piece) for piece in step] for step in steps]
        meta["max_running"] = max_running
    if decode_plan is not None:
        meta["decode_plan"] = decode_plan
        meta["decode_streams"] = decode.streams
        meta["decode_context"] = decode.context
    return plan, dur, meta, cost, comm_model, coll


def simulate(
    requests: RequestsLike,
    schedule: str = "cpp",
    *,
    model: str | StageCost = "deepseek-v3.1",
    hardware: str | None = None,
    tp: int | None = None,
    chunk_size: int = 24576,
    pp: int = 2,
    vp: int | None = None,
    layer_split: Sequence[int] | None = None,
    comm: CommModel | str | None = "preset",
    comm_mode: str | None = None,
    pack_window: int | None = DEFAULT_PACK_WINDOW,
    dcpp: DcppConfig | None = None,
    reorder: bool | None = None,
    collectives: CollectiveModel | str | None = "preset",
    pack_requests: bool = False,
    max_running: int | None = None,
    noise: float = 0.0,
    seed: int = 0,
    disturbance: Disturbance | None = None,
    decode: DecodeLoad | None = None,
    host_ns_per_token: float | str | None = None,
    host_form: str = "per_token",
) -> SimResult:
    """Simulate one run of `requests` under `schedule` and return its task and request tables.

    model: preset name (presets.PRESET_NAMES) or any StageCost (FittedCost, TabulatedCost, ...).
    comm: "preset" (the model's link figures; free for a custom cost model), None (free
    transfers) or a CommModel; comm_mode overrides blocking/async (default: async for vpp_async
    and vpp_pack). reorder: VPP-Async's s0(k+1)-before-s3(k-1) swap (default: on for vpp_async
    and vpp_pack). noise: multiplicative lognormal σ per task (0.03 = 3 %), drawn from `seed`.
    disturbance: outlier chunk, AR(1) noise, throttle step, run scale (pipelines.sim.disturbance).
    pack_requests: one scheduler step carries chunks of several requests (prepare); the task
    table then has one `batch` request (chunk k = step k, prefix 0) and the request table one row
    per request, its first token at the end of the step holding its last piece.
    decode: running decode streams ride along the steps (pipelines.sim.decode); meta then holds
    their inter-token latency (itl_p50_ns ... itl_max_ns) and decode_tokens.
    host_ns_per_token: host set-up time per prompt token before a request's first chunk
    (host_ready_ns); "preset" (the hardware preset's figure, 0 for a custom cost model), a
    number, or None (default: off, so a run starts at its first kernel as a written trace does).
    The wait counts in TTFT and, on every rank, in the run's window. host_form: "per_token"
    (default) or "quadratic" (host_ready_ns; the same set-up at 512K, (n / 512K)^2 of it at n).
    """
    plan, dur, meta, _, _, coll = prepare(
        requests,
        schedule,
        model=model,
        hardware=hardware,
        tp=tp,
        chunk_size=chunk_size,
        pp=pp,
        vp=vp,
        layer_split=layer_split,
        comm=comm,
        comm_mode=comm_mode,
        pack_window=pack_window,
        dcpp=dcpp,
        reorder=reorder,
        collectives=collectives,
        pack_requests=pack_requests,
        max_running=max_running,
        decode=decode,
    )
    host = _resolve_host(host_ns_per_token, model, hardware)
    ready = host_ready_ns(requests_frame(requests), host, host_form)
    step_ready = None
    if "request_steps" in meta:  # one packed batch: a step waits for its own requests' set-up
        step_ready = packed_step_ready(ready, meta["request_steps"])
        ready = step_ready[:1]
    meta["host_ns_per_token"] = host
    meta["host_form"] = host_form
    parts = collective_parts(plan, coll)
    if disturbance is None:
        durations = _noisy(dur, noise, seed)
    else:
        # a blocking collective is part of its call's duration: kernel slowdowns leave it alone,
        # the run factor scales it with everything else
        blocking = sum(parts.values()) if parts and coll.blocking else None
        durations, run = disturbed_durations(plan, dur, noise, seed, disturbance, blocking)
        parts = {name: ns * run for name, ns in parts.items()}
    release = _release(plan, ready)
    if step_ready is not None:
        first_stage = (plan.kind == COMPUTE) & (plan.stage == 0)
        release[first_stage] = step_ready[plan.chunk[first_stage]]
    start, end = evaluate(plan.graph, durations, release)
    meta.update(seed=seed, noise=noise)
    if disturbance is not None:
        meta["disturbance"] = disturbance.describe()
    decode_plan = meta.pop("decode_plan", None)
    if decode_plan is not None:
        meta.update(itl_metrics(decode_plan, end))
    tasks = task_table(plan, start, end, parts, coll is None or coll.blocking)
    if "request_steps" in meta:
        frame = requests_frame(requests)
        tasks = tasks.with_columns(pl.lit(0, pl.Int64).alias("prefix_tokens"))
        return SimResult(tasks, packed_request_table(frame, meta["request_steps"], tasks), meta)
    return SimResult(tasks, request_table(plan, end), meta)


def packed_request_table(
    frame: pl.DataFrame, steps: list[list[list[int]]], tasks: pl.DataFrame
) -> pl.DataFrame:
    """Request table of a packed run: a request's first token comes at the end of the last
    compute of the step holding its last piece."""
    step_end = dict(
        tasks.filter(pl.col("kind") == "compute")
        .group_by("chunk_idx")
        .agg(pl.col("end_ns").max())
        .iter_rows()
    )
    last_step = {}
    for k, step in enumerate(steps):
        for index, _, _ in step:
            last_step[index] = k
    first = np.array([step_end[last_step[i]] for i in range(frame.height)], dtype=np.int64)
    arrival = frame["arrival_ns"].to_numpy()
    return pl.DataFrame(
        {
            "request_id": frame["request_id"],
            "arrival_ns": arrival,
            "prompt_tokens": frame["prompt_tokens"],
            "first_token_ns": first,
            "ttft_ns": first - arrival,
        },
        schema=REQUEST_SCHEMA,
    )


def simulate_batch(
    requests: RequestsLike,
    schedule: str,
    costs: Sequence[StageCost],
    *,
    seeds: Sequence[int] = (0,),
    noise: float = 0.0,
    comm: CommModel | None = None,
    **options: Any,
) -> np.ndarray:
    """Makespan (ns) of every (cost model, seed) pair, shape (len(costs), len(seeds)).

    All configurations share one chunking and task graph (that of `costs[0]`: for dcpp the chunk
    sizes depend on the cost model, so give one cost per call there) and are evaluated together
    by the vectorised engine; each equals `simulate(...)` of that configuration (tested)."""
    plan, _, _, _, comm_model, _ = prepare(requests, schedule, model=costs[0], comm=comm, **options)
    columns = []
    pp, vp = plan.layout.pp, plan.layout.vp
    for cost in costs:
        layout = fold_back_layout(cost.num_layers, pp, vp, options.get("layer_split"))
        dur = stage_durations(plan, cost, comm_model, layout)
        for seed in seeds:
            columns.append(_noisy(dur, noise, seed))
    durations = np.stack(columns, axis=1)
    start, end = evaluate(plan.graph, durations, _release(plan)[:, None])
    makespan = end.max(axis=0) - start.min(axis=0)
    return makespan.reshape(len(costs), len(seeds))
