-- (run, rank, virtual stage, request) whose chunk indices are not exactly 0, 1, ..., n-1
select
    run_id,
    rank,
    vstage,
    request_id,
    count(*) as chunks,
    min(chunk_idx) as first_idx,
    max(chunk_idx) as last_idx,
    count(distinct chunk_idx) as distinct_idx
from chunks
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank, vstage, request_id
having min(chunk_idx) <> 0 or max(chunk_idx) <> count(*) - 1 or count(distinct chunk_idx) <> count(*)
order by run_id, rank, vstage, request_id
