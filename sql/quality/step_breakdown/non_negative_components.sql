-- breakdown rows with a negative component
select
    run_id,
    rank,
    step,
    origin,
    computing_ns,
    communication_ns,
    comm_not_overlapped_ns,
    overlapped_ns,
    free_ns,
    stage_ns,
    bubble_ns
from step_breakdown
where
    run_id in (select checked_runs.run_id from checked_runs)
    and least(
        computing_ns, communication_ns, comm_not_overlapped_ns, overlapped_ns, free_ns,
        stage_ns, bubble_ns
    ) < 0
order by run_id, rank, step, origin
