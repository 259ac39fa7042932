-- slices with a negative duration
select
    run_id,
    rank,
    lane,
    name,
    start_ns,
    dur_ns
from slices
where run_id in (select checked_runs.run_id from checked_runs) and dur_ns < 0
order by run_id, rank, start_ns
