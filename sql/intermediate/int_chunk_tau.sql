-- one row per chunk x virtual stage with its run configuration: tau_ns = device busy time of the
-- chunk on its stage; is_partial marks a request's last chunk when it is shorter than the others
-- (the remainder of seq_len / chunk_size), which curve fits leave out
select
    c.run_id,
    r.source,
    r.model,
    r.schedule,
    r.chunk_size,
    r.seq_len,
    r.tp,
    r.pp,
    r.vp,
    r.hardware,
    r.attention,
    r.replay_of,
    r.collected_at,
    c.rank,
    c.vstage,
    c.request_id,
    c.chunk_idx,
    c.tokens,
    c.prefix_tokens,
    c.start_ns,
    c.end_ns,
    c.busy_ns as tau_ns,
    c.chunk_idx = max(c.chunk_idx) over request as is_last_chunk,
    coalesce(
        c.chunk_idx = max(c.chunk_idx) over request
        and c.tokens < max(c.tokens) over request,
        false
    ) as is_partial
from chunks as c
join runs as r on r.run_id = c.run_id
window request as (partition by c.run_id, c.vstage, c.request_id)
