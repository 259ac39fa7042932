-- batch of the GX suite `chunks_per_request`: per run, rank, virtual stage and request, the
-- chunk indices (0, 1, ..., n-1 means first 0, last + 1 = n and n distinct)
select
    run_id,
    rank,
    vstage,
    request_id,
    count(*) as chunks,
    min(chunk_idx) as first_idx,
    max(chunk_idx) + 1 as last_idx_plus_one,
    count(distinct chunk_idx) as distinct_idx
from chunks
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank, vstage, request_id
order by run_id, rank, vstage, request_id
