-- one row per run: its configuration, TTFT (the makespan of its chunks, first chunk start to
-- last chunk end over every rank; else the longest rank's step window) and the rank-mean of
-- fct_rank_time_split's parts (computing, exposed communication, receive wait, free, p2p bubble), in ns
with chunk_span as (
    select
        run_id,
        max(end_ns) - min(start_ns) as makespan_ns,
        count(*) as n_chunks
    from chunks
    group by run_id
),

rank_mean as (
    select
        run_id,
        count(*) as n_ranks,
        avg(computing_ns) as computing_ns,
        avg(exposed_comm_ns) as exposed_comm_ns,
        avg(recv_wait_ns) as recv_wait_ns,
        avg(free_ns) as free_ns,
        avg(p2p_bubble_ns) as p2p_bubble_ns,
        max(window_ns) as window_ns
    from fct_rank_time_split
    group by run_id
)

select
    r.run_id,
    r.source,
    r.model,
    r.schedule,
    r.chunk_size,
    r.seq_len,
    r.pp,
    r.vp,
    r.hardware,
    r.collected_at,
    r.replay_of,
    m.n_ranks,
    m.computing_ns,
    m.exposed_comm_ns,
    m.recv_wait_ns,
    m.free_ns,
    m.p2p_bubble_ns,
    coalesce(c.n_chunks, 0) as n_chunks,
    coalesce(c.makespan_ns, m.window_ns) as ttft_ns
from runs as r
left join chunk_span as c on r.run_id = c.run_id
left join rank_mean as m on r.run_id = m.run_id
