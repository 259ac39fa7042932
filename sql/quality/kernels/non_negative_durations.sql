-- kernels with a negative duration or wait
select
    run_id,
    rank,
    step,
    name,
    start_ns,
    dur_ns,
    wait_ns
from kernels
where run_id in (select checked_runs.run_id from checked_runs) and (dur_ns < 0 or wait_ns < 0)
order by run_id, rank, start_ns
