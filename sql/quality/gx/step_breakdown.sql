-- batch of the GX suite `step_breakdown`; residual_ns is computing + comm_not_overlapped + free
-- - stage - bubble, null for rows judged incomplete (complete = false), which the warning
-- derived_rows_complete reports instead
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
    bubble_ns,
    complete,
    incomplete_reason,
    case
        when coalesce(complete, true)
            then computing_ns + comm_not_overlapped_ns + free_ns - stage_ns - coalesce(bubble_ns, 0)
    end as residual_ns
from step_breakdown
where run_id in (select checked_runs.run_id from checked_runs)
order by run_id, rank, step, origin
