-- (run, rank) where every kernel is stored more than once: a whole batch written twice (the
-- pipeline's fault), as opposed to a profiler export repeating a row (no_duplicated_events)
with copies as (
    select
        run_id,
        rank,
        count(*) as n
    from kernels
    where run_id in (select checked_runs.run_id from checked_runs)
    group by run_id, rank, step, name, type, core, start_ns, dur_ns
)

select
    run_id,
    rank,
    count(*) as distinct_kernels,
    sum(n) as rows_stored,
    min(n) as fewest_copies
from copies
group by run_id, rank
having min(n) > 1
order by run_id, rank
