-- breakdown rows stored more than once for one rank, step and origin
select
    run_id,
    rank,
    step,
    origin,
    count(*) as copies
from step_breakdown
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank, step, origin
having count(*) > 1
order by run_id, rank, step, origin
