-- kernels longer than their step's device window (stage + bubble of the rank's step_breakdown)
with step_span as (
    select
        run_id,
        rank,
        step,
        max(stage_ns + coalesce(bubble_ns, 0)) as step_ns
    from step_breakdown
    where run_id in (select checked_runs.run_id from checked_runs) and step is not null
    group by run_id, rank, step
)

select
    k.run_id,
    k.rank,
    k.step,
    k.name,
    k.start_ns,
    k.dur_ns,
    s.step_ns
from kernels as k
inner join step_span as s on k.run_id = s.run_id and k.rank = s.rank and k.step = s.step
where k.dur_ns > s.step_ns
order by k.run_id, k.rank, k.start_ns
