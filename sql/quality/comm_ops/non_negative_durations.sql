-- communication ops with a negative duration, wait, transit or sync time
select
    run_id,
    rank,
    step,
    op,
    start_ns,
    dur_ns,
    wait_ns,
    transit_ns,
    sync_ns
from comm_ops
where
    run_id in (select checked_runs.run_id from checked_runs)
    and (dur_ns < 0 or wait_ns < 0 or transit_ns < 0 or sync_ns < 0)
order by run_id, rank, start_ns
