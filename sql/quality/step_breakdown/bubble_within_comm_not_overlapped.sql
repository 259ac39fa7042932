-- rows whose bubble (time waiting in hcom_receive*) exceeds the communication not overlapped
-- with compute that it is part of (docs/quality.md: holds on every real row)
select
    run_id,
    rank,
    step,
    origin,
    comm_not_overlapped_ns,
    bubble_ns,
    bubble_ns - comm_not_overlapped_ns as excess_ns
from step_breakdown
where
    run_id in (select checked_runs.run_id from checked_runs)
    and bubble_ns > comm_not_overlapped_ns
order by run_id, rank, step, origin
