-- communication ops stored more than once: same rank, step, op, group, start and duration
select
    run_id,
    rank,
    step,
    op,
    start_ns,
    dur_ns,
    count(*) as copies
from comm_ops
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank, step, op, group_name, start_ns, dur_ns
having count(*) > 1
order by run_id, rank, start_ns
