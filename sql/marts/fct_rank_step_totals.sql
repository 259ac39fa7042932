-- one row per run x rank, as `tracereplay show` prints it: the preferred step_breakdown rows
-- (int_step_breakdown_preferred) summed over the rank's steps, with the derived row's
-- disagreement with the profiler where it has one (docs/step_breakdown.md).
select
    run_id,
    rank,
    -- 0: rows without a step number (no ProfilerStep in the capture: one whole-capture window)
    count(step) as steps,
    string_agg(distinct origin, '+' order by origin) as origin,
    bool_and(coalesce(complete, true)) as complete,
    sum(computing_ns)::bigint as computing_ns,
    sum(comm_not_overlapped_ns)::bigint as comm_not_overlapped_ns,
    sum(overlapped_ns)::bigint as overlapped_ns,
    sum(free_ns)::bigint as free_ns,
    sum(stage_ns)::bigint as stage_ns,
    sum(bubble_ns)::bigint as recv_wait_ns,
    sum(p2p_bubble_ns)::bigint as p2p_bubble_ns,
    any_value(derived_incomplete_reason) filter (where derived_complete = false)
        as derived_incomplete_reason,
    any_value(reference_origin) as reference_origin,
    sum(derived_stage_diff_ns)::bigint as derived_stage_diff_ns,
    min(derived_coverage) as derived_coverage
from int_step_breakdown_preferred
group by run_id, rank
