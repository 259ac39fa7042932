-- batch of the GX suite `kernels`: event_hash stands for step, name, type, core, start and
-- duration (the columns a repeated kernel row repeats); name is there for the examples
select
    run_id,
    rank,
    step,
    name,
    start_ns,
    dur_ns,
    wait_ns,
    work_class,
    hash(step, name, type, core, start_ns, dur_ns) as event_hash
from kernels
where run_id in (select checked_runs.run_id from checked_runs)
-- ties on start_ns broken by every other column: the same examples on every check
order by run_id, rank, start_ns, event_hash, wait_ns, work_class
