-- batch of the GX suite `runs` (pipelines/quality/suites/runs.json): the checked runs' rows
select
    run_id,
    source,
    content_hash
from runs
where run_id in (select checked_runs.run_id from checked_runs)
order by run_id
