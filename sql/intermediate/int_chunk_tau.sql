-- one row per chunk x virtual stage with its run configuration: tau_ns = device busy time of the
-- chunk on its stage; is_partial (int_chunk_flags) marks a request's shorter remainder chunk,
-- which curve fits leave out
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
    c.is_last_chunk,
    c.is_partial
from int_chunk_flags as c
inner join runs as r on c.run_id = r.run_id
