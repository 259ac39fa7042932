-- kernels starting before or ending after the run's slices (runs that have slices)
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
    k.run_id,
    k.rank,
    k.step,
    k.name,
    k.start_ns,
    k.dur_ns,
    s.first_ns,
    s.last_ns
from kernels as k
inner join span as s on k.run_id = s.run_id
where k.start_ns < s.first_ns or k.start_ns + k.dur_ns > s.last_ns
order by k.run_id, k.rank, k.start_ns
