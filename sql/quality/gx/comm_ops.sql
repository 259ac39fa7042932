-- batch of the GX suite `comm_ops`: event_hash stands for step, op, group, start and duration
select
    run_id,
    rank,
    step,
    op,
    start_ns,
    dur_ns,
    wait_ns,
    transit_ns,
    sync_ns,
    hash(step, op, group_name, start_ns, dur_ns) as event_hash
from comm_ops
where run_id in (select checked_runs.run_id from checked_runs)
-- ties on start_ns broken by every other column: the same examples on every check
order by run_id, rank, start_ns, event_hash, wait_ns, transit_ns, sync_ns
