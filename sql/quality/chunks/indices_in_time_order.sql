-- chunks that start before the previous chunk of the same request and stage
with ordered as (
    select
        run_id,
        rank,
        vstage,
        request_id,
        chunk_idx,
        start_ns,
        lag(start_ns) over (
            partition by run_id, rank, vstage, request_id order by chunk_idx
        ) as previous_start_ns
    from chunks
    where run_id in (select checked_runs.run_id from checked_runs)
)

select
    run_id,
    rank,
    vstage,
    request_id,
    chunk_idx,
    start_ns,
    previous_start_ns
from ordered
where start_ns < previous_start_ns
order by run_id, rank, vstage, request_id, chunk_idx
