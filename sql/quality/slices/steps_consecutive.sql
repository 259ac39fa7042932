-- (run, rank) whose step numbers have a gap: the numbers need not start at 0 (torch_npu's
-- ProfilerStep#N counts from the profiler schedule's first recorded step, docs/quality.md) but
-- run without a hole from the first to the last
select
    run_id,
    rank,
    count(distinct step) as steps,
    min(step) as first_step,
    max(step) as last_step
from slices
where run_id in (select checked_runs.run_id from checked_runs) and step is not null
group by run_id, rank
having max(step) - min(step) + 1 <> count(distinct step)
order by run_id, rank
