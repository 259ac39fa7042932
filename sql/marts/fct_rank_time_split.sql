-- one row per run and rank: the preferred step breakdown (int_step_breakdown_preferred) summed
-- over the rank's steps, split so the parts add up to the step window (stage + receive
-- wait, docs/step_breakdown.md): computing, exposed communication (not overlapped, without the
-- profiler's receive wait), recv_wait (the profiler's step_trace "Bubble": hcom_receive* waits;
-- not the paper's bubble, docs/metrics.md "Names") and free; p2p_bubble_ns is ours (waits
-- inside every p2p op), shown beside it, not stacked
select
    b.run_id,
    b.rank,
    count(*) as n_steps,
    string_agg(distinct b.origin, ',' order by b.origin) as origin,
    bool_and(coalesce(b.complete, false)) as complete,
    sum(b.computing_ns) as computing_ns,
    sum(greatest(b.comm_not_overlapped_ns - coalesce(b.bubble_ns, 0), 0)) as exposed_comm_ns,
    sum(coalesce(b.bubble_ns, 0)) as recv_wait_ns,
    sum(b.free_ns) as free_ns,
    sum(b.stage_ns + coalesce(b.bubble_ns, 0)) as window_ns,
    sum(b.p2p_bubble_ns) as p2p_bubble_ns
from int_step_breakdown_preferred as b
group by b.run_id, b.rank
