-- complete ranks whose parts (computing + exposed comm + bubble + free) differ from the step
-- window (stage + bubble) by more than 1 µs per step; ranks with a step whose bubble exceeds
-- comm_not_overlapped are left to step_breakdown.bubble_within_comm_not_overlapped
with inconsistent as (
    select distinct
        run_id,
        rank
    from int_step_breakdown_preferred
    where bubble_ns > comm_not_overlapped_ns
)

select
    s.run_id,
    s.rank,
    s.n_steps,
    s.computing_ns,
    s.exposed_comm_ns,
    s.bubble_ns,
    s.free_ns,
    s.window_ns,
    s.computing_ns + s.exposed_comm_ns + s.bubble_ns + s.free_ns - s.window_ns as residual_ns
from fct_rank_time_split as s
where
    s.run_id in (select checked_runs.run_id from checked_runs)
    and s.complete
    and (s.run_id, s.rank) not in (select (i.run_id, i.rank) from inconsistent as i)
    and abs(s.computing_ns + s.exposed_comm_ns + s.bubble_ns + s.free_ns - s.window_ns)
    > 1000 * s.n_steps
order by s.run_id, s.rank
