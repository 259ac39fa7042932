-- batch of the GX suite `step_breakdown_per_rank`: per run, rank and origin, the span of the
-- step numbers against how many distinct ones there are (no gap: docs/quality.md §Steps)
select
    run_id,
    rank,
    origin,
    min(step) as first_step,
    max(step) as last_step,
    max(step) - min(step) + 1 as step_span,
    count(distinct step) as steps
from step_breakdown
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank, origin
order by run_id, rank, origin
