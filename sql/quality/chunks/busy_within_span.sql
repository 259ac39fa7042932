-- chunks ending before they start, or busier than their own span
select
    run_id,
    rank,
    vstage,
    request_id,
    chunk_idx,
    start_ns,
    end_ns,
    busy_ns
from chunks
where
    run_id in (select checked_runs.run_id from checked_runs)
    and (end_ns < start_ns or busy_ns < 0 or busy_ns > end_ns - start_ns)
order by run_id, rank, vstage, request_id, chunk_idx
