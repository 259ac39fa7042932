-- input files whose digest is not 64 lower-case hex digits
select
    run_id,
    path,
    sha256
from run_inputs
where run_id in (select checked_runs.run_id from checked_runs) and not regexp_full_match(sha256, '[0-9a-f]{64}')
order by run_id, path
