-- batch of the GX suite `run_inputs`: one row per input file of the checked runs
select
    run_id,
    path,
    bytes,
    sha256
from run_inputs
where run_id in (select checked_runs.run_id from checked_runs)
order by run_id, path
