-- batch of the GX suite `slices_per_rank`: per run and rank, the span of the non-null step
-- numbers against how many distinct ones there are (no gap: docs/quality.md §Steps)
select
    run_id,
    rank,
    min(step) as first_step,
    max(step) as last_step,
    max(step) - min(step) + 1 as step_span,
    count(distinct step) as steps
from slices
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank
order by run_id, rank
