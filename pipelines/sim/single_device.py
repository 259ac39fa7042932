"""Single-device chunked-prefill scheduler (Sarathi-Serve-style, the chunked-prefill reference):
decode-first token budget, per-request cap, interactive-first priority, roofline step cost.

Every step runs one forward pass. The running decode streams take one token each, first; what is
left of the step's token budget goes to waiting prompts in queue order (arrival order, or
interactive prompts first), each taking `min(tokens left in its prompt, budget left, cap)`. A
prompt's first token appears at the end of the step that computes its last chunk. Without a
budget every waiting prompt runs whole in the next step (the "no chunking" baseline).

Output is a `SimResult` (rank 0, vstage -1, schedule "single"). A step is one batched pass; the
task table splits it into back-to-back pieces so that each piece is a distinct device interval:
first the decode batch (request_id `DECODE_REQUEST`, chunk_idx = step index, tokens = decoders,
prefix = decode context), then one piece per prefill chunk, each lasting its share of the step's
binding resource (roofline.StepCost.shares). Consequently a request's `first_token_ns` is the end
of the step holding its last chunk (the seed's TTFT), which can be later than that chunk's own
piece. `meta["steps_ns"]` lists each step's [start_ns, end_ns]; trace writers turn them into
ProfilerStep windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.sim.result import REQUEST_SCHEMA, TASK_SCHEMA, SimResult
from pipelines.sim.roofline import H100_SXM, LLAMA3_8B, Accelerator, DenseModel, step_cost

DECODE_REQUEST = "decode"
NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class Policy:
    """How a step's token budget is handed out. `budget` counts decode tokens too (None: no
    budget, whole prompts); `cap` limits one request's tokens per step (None: no cap)."""

    name: str
    budget: int | None
    cap: int | None = None
    interactive_first: bool = False


# The five policies of the chunked-prefill reference's table, in its order.
SEED_POLICIES: tuple[Policy, ...] = (
    Policy("no chunking (whole prompts)", None),
    Policy("chunked, budget 8192", 8192),
    Policy("chunked, budget 2048", 2048),
    Policy("budget 8192, cap 2048/request", 8192, cap=2048),
    Policy("budget 2048, interactive first", 2048, interactive_first=True),
)


@dataclass(frozen=True)
class Workload:
    """The chunked-prefill reference's workload by default: 48 streams decoding at 4k context for 3
    s, a 500-token interactive prompt every 50 ms from t=0, and one 32,768-token batch prompt at 0.5
    s. Interactive prompts leave after their first token, so they add no decode load."""

    decoders: int = 48
    decode_ctx: int = 4096
    horizon_ns: int = 3 * NS_PER_S
    short_tokens: int = 500
    short_gap_ns: int = 50_000_000
    long_tokens: int = 32768
    long_count: int = 1
    long_first_ns: int = 500_000_000
    long_gap_ns: int = 100_000_000

    def prompts(self) -> pl.DataFrame:
        """request_id, arrival_ns, prompt_tokens, interactive; in queue order (arrival, then
        interactive prompts before batch ones that arrive at the same instant)."""
        n_short = self.horizon_ns // self.short_gap_ns if self.short_gap_ns > 0 else 0
        short = pl.DataFrame(
            {
                "request_id": [f"short-{i:03d}" for i in range(n_short)],
                "arrival_ns": np.arange(n_short, dtype=np.int64) * self.short_gap_ns,
                "prompt_tokens": np.full(n_short, self.short_tokens, dtype=np.int64),
                "interactive": np.ones(n_short, dtype=bool),
            }
        )
        longs = pl.DataFrame(
            {
                "request_id": [f"long-{i:03d}" for i in range(self.long_count)],
                "arrival_ns": self.long_first_ns
                + np.arange(self.long_count, dtype=np.int64) * self.long_gap_ns,
                "prompt_tokens": np.full(self.long_count, self.long_tokens, dtype=np.int64),
                "interactive": np.zeros(self.long_count, dtype=bool),
            }
        )
        both = pl.concat([short, longs]).with_row_index("queue_pos")
        return both.sort(["arrival_ns", "queue_pos"]).drop("queue_pos")


def _pick_chunks(
    order: list[int], remaining: np.ndarray, policy: Policy, decoders: int
) -> list[tuple[int, int]]:
    """(request index, tokens) for this step: decodes take their tokens first, then each waiting
    prompt in `order` takes min(its remaining tokens, budget left, cap) until none is left."""
    left = policy.budget - decoders if policy.budget is not None else None
    picked: list[tuple[int, int]] = []
    for i in order:
        if left is not None and left <= 0:
            break
        c = int(remaining[i])
        if left is not None:
            c = min(c, left)
        if policy.cap is not None:
            c = min(c, policy.cap)
        if left is not None:
            left -= c
        picked.append((i, c))
    return picked


@dataclass
class SingleDeviceRun:
    """A scheduled run: the contract result, its steps and which requests are interactive."""

    result: SimResult
    steps: pl.DataFrame  # step, start_ns, end_ns, decode_tokens, prefill_tokens, chunks
    interactive: pl.DataFrame  # request_id, interactive


def simulate_single(
    policy: Policy,
    workload: Workload | None = None,
    model: DenseModel = LLAMA3_8B,
    hw: Accelerator = H100_SXM,
    noise: float = 0.0,
    seed: int = 0,
) -> SingleDeviceRun:
    """Run the decode-first chunked-prefill scheduler until every prompt has its first token and
    the horizon has passed. `noise` is the sigma of a multiplicative log-normal factor on each
    step's duration (0: the exact roofline)."""
    wl = workload or Workload()
    if policy.budget is not None and policy.budget <= wl.decoders:
        raise ValueError(f"budget {policy.budget} leaves no room after {wl.decoders} decodes")
    if policy.cap is not None and policy.cap <= 0:
        raise ValueError(f"cap must be positive, got {policy.cap}")
    rng = np.random.default_rng(seed)
    prompts = wl.prompts()
    ids = prompts["request_id"].to_list()
    arrival = prompts["arrival_ns"].to_numpy()
    length = prompts["prompt_tokens"].to_numpy()
    interactive = prompts["interactive"].to_numpy()
    done = np.zeros(len(ids), dtype=np.int64)
    n_chunks = np.zeros(len(ids), dtype=np.int64)
    first_token = np.full(len(ids), -1, dtype=np.int64)

    step_rows: list[tuple[int, int, int, int, int, int]] = []
    piece_rows: list[tuple[str, int, int, int, int, int]] = []
    waiting: list[int] = []
    next_arrival = 0
    now = 0
    step = 0
    while True:
        while next_arrival < len(ids) and arrival[next_arrival] <= now:
            waiting.append(next_arrival)
            next_arrival += 1
        if now >= wl.horizon_ns and not waiting and next_arrival == len(ids):
            break
        if policy.interactive_first:
            order = sorted(waiting, key=lambda i: not interactive[i])
        else:
            order = waiting
        picked = _pick_chunks(order, length - done, policy, wl.decoders)
        chunk_tokens = np.array([c for _, c in picked], dtype=np.int64)
        chunk_prefix = np.array([done[i] for i, _ in picked], dtype=np.int64)
        cost = step_cost(model, hw, wl.decoders, wl.decode_ctx, chunk_tokens, chunk_prefix)
        factor = float(rng.lognormal(0.0, noise)) if noise > 0 else 1.0
        dur = round(cost.seconds * factor * NS_PER_S)
        bounds = now + np.rint(np.concatenate(([0.0], np.cumsum(cost.shares))) * dur).astype(
            np.int64
        )
        bounds[-1] = now + dur
        piece_rows.append((DECODE_REQUEST, step, wl.decoders, wl.decode_ctx, bounds[0], bounds[1]))
        for j, (i, c) in enumerate(picked):
            start, end = bounds[j + 1], bounds[j + 2]
            piece_rows.append((ids[i], int(n_chunks[i]), c, int(done[i]), start, end))
            n_chunks[i] += 1
            done[i] += c
        step_rows.append((step, now, now + dur, wl.decoders, int(chunk_tokens.sum()), len(picked)))
        now += dur
        step += 1
        finished = [i for i, _ in picked if done[i] == length[i]]
        for i in finished:
            first_token[i] = now
            waiting.remove(i)

    pieces = pl.DataFrame(
        piece_rows,
        schema=["request_id", "chunk_idx", "tokens", "prefix_tokens", "start_ns", "end_ns"],
        orient="row",
    )
    tasks = pieces.with_columns(
        pl.lit(-1).alias("vstage"), pl.lit(0).alias("rank"), pl.lit("compute").alias("kind")
    ).select([pl.col(c).cast(t) for c, t in TASK_SCHEMA.items()])
    requests = (
        prompts.with_columns(pl.Series("first_token_ns", first_token))
        .with_columns((pl.col("first_token_ns") - pl.col("arrival_ns")).alias("ttft_ns"))
        .select([pl.col(c).cast(t) for c, t in REQUEST_SCHEMA.items()])
    )
    steps = pl.DataFrame(
        step_rows,
        schema=["step", "start_ns", "end_ns", "decode_tokens", "prefill_tokens", "chunks"],
        orient="row",
    )
    meta = {
        "model": model.name,
        "schedule": "single",
        "chunk_size": policy.budget,
        "seq_len": wl.long_tokens,
        "tp": 1,
        "pp": 1,
        "vp": 1,
        "hardware": hw.name,
        "seed": seed,
        "noise": noise,
        "policy": policy.name,
        "budget": policy.budget,
        "cap": policy.cap,
        "interactive_first": policy.interactive_first,
        "decoders": wl.decoders,
        "decode_ctx": wl.decode_ctx,
        "horizon_ns": wl.horizon_ns,
        "background_request_ids": [DECODE_REQUEST],
        "steps_ns": [[int(s), int(e)] for _, s, e, *_ in step_rows],
    }
    return SingleDeviceRun(
        result=SimResult(tasks=tasks, requests=requests, meta=meta),
        steps=steps,
        interactive=prompts.select("request_id", "interactive"),
    )


@dataclass(frozen=True)
class SeedMetrics:
    """The five figures of the chunked-prefill reference's table. ITL gaps are the durations of
    steps that end within the horizon (every decode stream emits one token per step); p50 is the
    upper median (sorted[n // 2]), the seed's convention."""

    itl_p50_ms: float
    itl_max_ms: float
    long_ttft_s: float
    short_ttft_p50_ms: float
    short_ttft_max_ms: float

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


def _upper_median(values: Sequence[int] | np.ndarray) -> float:
    ordered = np.sort(np.asarray(values))
    return float(ordered[len(ordered) // 2])


def seed_metrics(run: SingleDeviceRun) -> SeedMetrics:
    """ITL p50/max, batch-prompt TTFT (the first one) and interactive TTFT p50/max of a run."""
    horizon = int(run.result.meta["horizon_ns"])
    gaps = run.steps.filter(pl.col("end_ns") <= horizon).select(
        (pl.col("end_ns") - pl.col("start_ns")).alias("gap")
    )["gap"]
    ttft = run.result.requests.join(run.interactive, on="request_id")
    short = ttft.filter(pl.col("interactive"))["ttft_ns"].to_numpy()
    long = ttft.filter(~pl.col("interactive")).sort("arrival_ns")["ttft_ns"].to_numpy()
    return SeedMetrics(
        itl_p50_ms=_upper_median(gaps.to_numpy()) / 1e6,
        itl_max_ms=float(gaps.max()) / 1e6,
        long_ttft_s=float(long[0]) / 1e9 if len(long) else float("nan"),
        short_ttft_p50_ms=_upper_median(short) / 1e6 if len(short) else float("nan"),
        short_ttft_max_ms=float(short.max()) / 1e6 if len(short) else float("nan"),
    )
