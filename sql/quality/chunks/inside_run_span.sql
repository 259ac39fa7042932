-- chunks starting before or ending after the run's slices
with span as (
    select
        run_id,
        min(start_ns) as first_ns,
        max(start_ns + dur_ns) as last_ns
    from slices
    where run_id in (select checked_runs.run_id from checked_runs)
    group by run_id
)

select
    c.run_id,
    c.rank,
    c.vstage,
    c.request_id,
    c.chunk_idx,
    c.start_ns,
    c.end_ns,
    s.first_ns,
    s.last_ns
from chunks as c
inner join span as s on c.run_id = s.run_id
where c.start_ns < s.first_ns or c.end_ns > s.last_ns
order by c.run_id, c.rank, c.vstage, c.request_id, c.chunk_idx
