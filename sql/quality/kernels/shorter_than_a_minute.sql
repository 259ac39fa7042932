-- kernels of a minute or more: a duration read in the wrong unit (ms as µs, µs as ns)
select
    run_id,
    rank,
    step,
    name,
    start_ns,
    dur_ns
from kernels
where run_id in (select checked_runs.run_id from checked_runs) and dur_ns >= 60000000000
order by run_id, rank, start_ns
