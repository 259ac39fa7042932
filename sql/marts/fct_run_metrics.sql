-- one row per run: its configuration and every run-level metric of docs/metrics.md. Rank
-- figures are means over the run's ranks (one stage's view of the run); tau figures are means
-- over the run's virtual stages.
with requests as (
    select
        run_id,
        count(*) as n_requests,
        avg(ttft_ns) as ttft_ns,
        quantile_cont(ttft_ns, 0.5) as ttft_p50_ns,
        quantile_cont(ttft_ns, 0.9) as ttft_p90_ns,
        quantile_cont(ttft_ns, 0.99) as ttft_p99_ns,
        max(ttft_ns) as ttft_max_ns,
        sum(prompt_tokens) as prompt_tokens
    from fct_request_ttft
    group by run_id
),

span as (
    select
        run_id,
        max(end_ns) - min(start_ns) as makespan_ns
    from chunks
    group by run_id
),

ranks as (
    select
        run_id,
        count(*) as n_ranks,
        max(n_steps) as n_steps,
        string_agg(distinct origins, ',') as breakdown_origins,
        avg(compute_ns) as compute_ns,
        avg(bubble_ns) as bubble_ns,
        avg(exposed_comm_ns) as exposed_comm_ns,
        sum(overlapped_ns) / nullif(sum(comm_ns), 0) as overlap_ratio
    from fct_rank_breakdown
    group by run_id
),

tau as (
    select
        run_id,
        avg(tau_slope_ns) as tau_slope_ns,
        avg(tau_intercept_ns) as tau_intercept_ns,
        avg(tau_intercept_ns) / nullif(avg(tau_slope_ns), 0) as tau_ab
    from fct_run_tau_fit
    group by run_id
)

select
    r.run_id,
    r.source,
    r.model,
    r.schedule,
    r.seq_len,
    r.chunk_size,
    r.tp,
    r.pp,
    r.vp,
    r.hardware,
    r.collected_at,
    r.replay_of,
    q.n_requests,
    k.n_ranks,
    k.breakdown_origins,
    q.ttft_ns,
    q.ttft_p50_ns,
    q.ttft_p90_ns,
    q.ttft_p99_ns,
    q.ttft_max_ns,
    s.makespan_ns,
    q.prompt_tokens,
    k.compute_ns,
    k.bubble_ns,
    k.exposed_comm_ns,
    k.overlap_ratio,
    k.n_steps,
    t.tau_slope_ns,
    t.tau_intercept_ns,
    t.tau_ab,
    q.prompt_tokens / nullif(s.makespan_ns / 1e9, 0) as throughput_tok_s,
    k.compute_ns + k.bubble_ns + k.exposed_comm_ns as total_ns,
    k.bubble_ns / nullif(k.compute_ns + k.bubble_ns + k.exposed_comm_ns, 0) as bubble_ratio,
    -- table 2's window (docs/metrics.md "Names"): every rank over the run's makespan, so fill
    -- and drain count; never below the per-rank bubble
    greatest(
        coalesce(s.makespan_ns - k.compute_ns - k.exposed_comm_ns, k.bubble_ns), k.bubble_ns
    ) as run_bubble_ns,
    k.compute_ns + k.exposed_comm_ns + greatest(
        coalesce(s.makespan_ns - k.compute_ns - k.exposed_comm_ns, k.bubble_ns), k.bubble_ns
    ) as run_total_ns
from runs as r
left join requests as q on r.run_id = q.run_id
left join span as s on r.run_id = s.run_id
left join ranks as k on r.run_id = k.run_id
left join tau as t on r.run_id = t.run_id
