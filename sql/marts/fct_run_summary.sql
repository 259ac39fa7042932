-- one row per run, as `tracereplay runs` lists it: the run's facts, its rank count, its makespan
-- (first device or host event start to last end, else the kernels' span, else the chunks' span)
-- and how many chunks are stored.
with span as (
    select
        run_id,
        max(start_ns + dur_ns) - min(start_ns) as makespan_ns
    from slices
    group by run_id
),

kernel_span as (
    select
        run_id,
        max(start_ns + dur_ns) - min(start_ns) as kernel_span_ns
    from kernels
    group by run_id
),

chunk_span as (
    select
        run_id,
        count(*) as chunks,
        max(end_ns) - min(start_ns) as chunk_span_ns
    from chunks
    group by run_id
),

rank_count as (
    select
        run_id,
        count(*) as ranks
    from ranks
    group by run_id
)

select
    r.run_id,
    r.source,
    r.model,
    r.schedule,
    r.seq_len,
    r.chunk_size,
    r.collected_at,
    r.replay_of,
    r.origin,
    coalesce(k.ranks, 0) as ranks,
    coalesce(s.makespan_ns, ks.kernel_span_ns, c.chunk_span_ns) as makespan_ns,
    coalesce(c.chunks, 0) as chunks
from runs as r
left join span as s on r.run_id = s.run_id
left join kernel_span as ks on r.run_id = ks.run_id
left join chunk_span as c on r.run_id = c.run_id
left join rank_count as k on r.run_id = k.run_id
