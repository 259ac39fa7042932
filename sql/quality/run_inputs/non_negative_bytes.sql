-- input files recorded with a negative size
select
    run_id,
    path,
    bytes
from run_inputs
where run_id in (select checked_runs.run_id from checked_runs) and bytes < 0
order by run_id, path
