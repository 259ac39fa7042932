-- batch of the GX suite `chunks`: span_ns = end - start; previous_start_ns is the start of
-- chunk k-1 of the same run, rank, virtual stage and request (null for the first)
select
    run_id,
    rank,
    vstage,
    request_id,
    chunk_idx,
    start_ns,
    end_ns,
    busy_ns,
    end_ns - start_ns as span_ns,
    lag(start_ns) over (
        partition by run_id, rank, vstage, request_id order by chunk_idx
    ) as previous_start_ns
from chunks
where run_id in (select checked_runs.run_id from checked_runs)
order by run_id, rank, vstage, request_id, chunk_idx
