-- rows not known to be incomplete where computing + comm_not_overlapped + free differs from
-- stage + bubble by more than 1 µs (docs/quality.md: the identity as measured on real exports)
select
    run_id,
    rank,
    step,
    origin,
    computing_ns,
    comm_not_overlapped_ns,
    free_ns,
    stage_ns,
    bubble_ns,
    computing_ns + comm_not_overlapped_ns + free_ns - stage_ns - coalesce(bubble_ns, 0)
        as residual_ns
from step_breakdown
where
    run_id in (select checked_runs.run_id from checked_runs)
    and complete is distinct from false
    and abs(computing_ns + comm_not_overlapped_ns + free_ns - stage_ns - coalesce(bubble_ns, 0))
    > 1000
order by run_id, rank, step, origin
