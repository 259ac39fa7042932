-- batch of the GX suite `fct_rank_time_split`; residual_per_step_ns is |computing + exposed
-- comm + recv_wait + free - window| / n_steps, null where the identity is not expected: ranks not
-- complete, and ranks with a step whose bubble exceeds comm_not_overlapped (the warning
-- step_breakdown.bubble_within_comm_not_overlapped reports those)
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
    s.recv_wait_ns,
    s.free_ns,
    s.window_ns,
    case
        when s.complete and i.run_id is null
            then
                abs(s.computing_ns + s.exposed_comm_ns + s.recv_wait_ns + s.free_ns - s.window_ns)
                / s.n_steps
    end as residual_per_step_ns
from fct_rank_time_split as s
left join inconsistent as i on s.run_id = i.run_id and s.rank = i.rank
where s.run_id in (select checked_runs.run_id from checked_runs)
order by s.run_id, s.rank
