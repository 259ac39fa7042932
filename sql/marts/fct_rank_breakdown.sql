-- one row per run x rank: the trusted step_breakdown rows (int_step_breakdown_preferred) summed
-- over the run's steps (docs/metrics.md). bubble: the stage's idle time, free (no device event)
-- plus the pipeline wait: our p2p bubble (time inside send / receive with no compute running)
-- where a complete derived row gives it, else the profiler's Bubble (time in hcom_receive*),
-- counted only up to the non-overlapped communication (msprof's Bubble never exceeds it; a
-- writer that books an overlapped async receive as Bubble would otherwise inflate it): the seed
-- paper's Table 2 bubble (idle + launch-blocked). exposed comm: communication not hidden behind
-- compute, that wait excluded (it is bubble); overlap ratio: overlapped / communication time.
select
    run_id,
    rank,
    count(*) as n_steps,
    string_agg(distinct origin, ',' order by origin) as origins,
    bool_and(coalesce(complete, false)) as all_complete,
    sum(computing_ns) as compute_ns,
    sum(
        coalesce(free_ns, 0)
        + coalesce(
            p2p_bubble_ns,
            least(coalesce(bubble_ns, 0), coalesce(comm_not_overlapped_ns, bubble_ns, 0))
        )
    ) as bubble_ns,
    sum(bubble_ns) as recv_wait_ns,
    sum(p2p_bubble_ns) as p2p_bubble_ns,
    sum(
        greatest(
            case
                when p2p_bubble_ns is not null then comm_not_overlapped_ns - p2p_bubble_ns
                else coalesce(
                    comm_not_overlapped_excl_receive_ns,
                    comm_not_overlapped_ns - coalesce(bubble_ns, 0)
                )
            end,
            0
        )
    ) as exposed_comm_ns,
    sum(communication_ns) as comm_ns,
    sum(overlapped_ns) as overlapped_ns,
    sum(free_ns) as free_ns,
    sum(stage_ns) as stage_ns,
    sum(overlapped_ns) / nullif(sum(communication_ns), 0) as overlap_ratio
from int_step_breakdown_preferred
group by run_id, rank
