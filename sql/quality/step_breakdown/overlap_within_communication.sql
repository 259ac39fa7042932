-- rows whose overlapped communication exceeds all communication
select
    run_id,
    rank,
    step,
    origin,
    communication_ns,
    overlapped_ns
from step_breakdown
where run_id in (select checked_runs.run_id from checked_runs) and overlapped_ns > communication_ns
order by run_id, rank, step, origin
