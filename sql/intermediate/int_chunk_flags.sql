-- one row per chunk row, with the rule curve fits use to leave chunks out: is_last_chunk marks a
-- request's last chunk on its virtual stage, is_partial that last chunk when it is shorter than
-- the request's longest (the remainder of seq_len / chunk_size). Reads only run_id, vstage,
-- request_id, chunk_idx and tokens, and passes every other column through, so the same file
-- flags in-memory chunk frames (pipelines.analysis.tau_points.flag_partial_chunks); hence the
-- wildcard (sqlfluff AM04 waived on that line)
select
    c.*,  -- noqa: AM04
    c.chunk_idx = max(c.chunk_idx) over request as is_last_chunk,
    coalesce(
        c.chunk_idx = max(c.chunk_idx) over request
        and c.tokens < max(c.tokens) over request,
        false
    ) as is_partial
from chunks as c
window request as (partition by c.run_id, c.vstage, c.request_id)
