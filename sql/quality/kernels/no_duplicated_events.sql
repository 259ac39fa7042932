-- kernels stored more than once: same rank, step, name, type, core, start and duration
select
    run_id,
    rank,
    step,
    name,
    start_ns,
    dur_ns,
    count(*) as copies
from kernels
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank, step, name, type, core, start_ns, dur_ns
having count(*) > 1
order by run_id, rank, start_ns
