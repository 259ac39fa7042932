-- slices stored more than once: same rank, lane, thread, name, start, duration and args
select
    run_id,
    rank,
    lane,
    thread,
    name,
    start_ns,
    dur_ns,
    count(*) as copies
from slices
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank, lane, thread, name, start_ns, dur_ns, args
having count(*) > 1
order by run_id, rank, start_ns
