-- ranks with a negative part of the step window
select
    run_id,
    rank,
    computing_ns,
    exposed_comm_ns,
    bubble_ns,
    free_ns,
    window_ns
from fct_rank_time_split
where
    run_id in (select checked_runs.run_id from checked_runs)
    and (computing_ns < 0 or exposed_comm_ns < 0 or bubble_ns < 0 or free_ns < 0 or window_ns < 0)
order by run_id, rank
