-- (run, rank, origin) whose step numbers have a gap: they need not start at 0 (ProfilerStep#N
-- numbering, docs/quality.md) but run without a hole from the first to the last
select
    run_id,
    rank,
    origin,
    count(distinct step) as steps,
    min(step) as first_step,
    max(step) as last_step
from step_breakdown
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank, origin
having max(step) - min(step) + 1 <> count(distinct step)
order by run_id, rank, origin
