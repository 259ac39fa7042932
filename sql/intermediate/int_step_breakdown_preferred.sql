-- one row per run, rank and step: the breakdown to trust (docs/step_breakdown.md). Preference:
-- profiler (the profiler's own step_trace_time.csv / analysis.db rows) > a complete derived or
-- simulated row > cluster (msprof-analyze's copy of the profiler's rows, µs floats) > a derived
-- row nothing could judge (complete null) > an incomplete derived row (only when it is all
-- there is). Carries the chosen row's origin, complete and incomplete_reason, the origins there
-- were, and the derived row's verdict and disagreement with the reference (profiler, else
-- cluster) row: derived minus reference stage / computing / communication, and its coverage
-- (derived device window stage + bubble over the reference's). p2p_bubble_ns (ours only) comes
-- from the derived row when that is complete.
with ranked as (
    select
        b.*,
        row_number() over (
            partition by b.run_id, b.rank, b.step
            order by
                case
                    when b.origin = 'profiler' then 0
                    when b.origin in ('derived', 'sim') and b.complete then 1
                    when b.origin = 'cluster' then 2
                    when b.complete is null then 3
                    else 4
                end,
                b.origin
        ) as preference,
        string_agg(b.origin, ',' order by b.origin) over (
            partition by b.run_id, b.rank, b.step
        ) as origins
    from step_breakdown as b
),

derived as (
    select *
    from step_breakdown
    where origin = 'derived'
    qualify row_number() over (partition by run_id, rank, step order by complete desc nulls last) = 1
),

reference as (
    select *
    from step_breakdown
    where origin in ('profiler', 'cluster')
    qualify row_number() over (
        partition by run_id, rank, step order by case origin when 'profiler' then 0 else 1 end
    ) = 1
)

select
    p.run_id,
    p.rank,
    p.step,
    p.origin,
    p.complete,
    p.incomplete_reason,
    p.origins,
    p.computing_ns,
    p.communication_ns,
    p.comm_not_overlapped_ns,
    p.overlapped_ns,
    p.free_ns,
    p.stage_ns,
    p.bubble_ns,
    p.comm_not_overlapped_excl_receive_ns,
    p.preparing_ns,
    d.complete as derived_complete,
    d.incomplete_reason as derived_incomplete_reason,
    coalesce(p.p2p_bubble_ns, case when d.complete then d.p2p_bubble_ns end) as p2p_bubble_ns,
    case when d.run_id is not null then r.origin end as reference_origin,
    d.stage_ns - r.stage_ns as derived_stage_diff_ns,
    d.computing_ns - r.computing_ns as derived_computing_diff_ns,
    d.communication_ns - r.communication_ns as derived_communication_diff_ns,
    (d.stage_ns + coalesce(d.bubble_ns, 0))
    / nullif(r.stage_ns + coalesce(r.bubble_ns, 0), 0) as derived_coverage
from ranked as p
left join derived as d
    on p.run_id = d.run_id and p.rank = d.rank and d.step is not distinct from p.step
left join reference as r
    on p.run_id = r.run_id and p.rank = r.rank and r.step is not distinct from p.step
where p.preference = 1
