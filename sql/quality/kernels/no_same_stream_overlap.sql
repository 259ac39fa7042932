-- compute kernels that start before the kernel before them on the same engine and stream has
-- ended, by more than max(2 µs, a quarter of the shorter one): a device stream runs one task at
-- a time, so two different compute tasks of one stream cannot overlap (a start time moved back,
-- a clock slip). The kernels table has no stream column: a kernel's stream is the thread of the
-- compute-lane slice of its rank with the same name and start (trace_view / Kineto device
-- task), and a pair is left alone when both streams are known and differ. In a rank with no
-- compute-lane slice at all (a kernel_details.csv without trace_view.json) no stream is known:
-- kernels of two streams may run at once on the AI cores, so there only a pair of one name is
-- judged (a kernel written again later; issue 36 round six). Engines that run beside the AI
-- cores (AI_CPU, DSA_SQE) are their own partition. A pair with the same start and duration is
-- one task named twice (the duplicate rules' business). Largest real overlap under this rule:
-- 3,744 ns, 16.3 % of the shorter kernel at most (docs/quality.md)
with slice_streams as (
    select
        run_id,
        rank,
        name,
        start_ns,
        min(thread) as device_stream
    from slices
    where
        run_id in (select checked_runs.run_id from checked_runs)
        and lane = 'compute'
    group by run_id, rank, name, start_ns
),

ranks_with_streams as (
    select distinct
        run_id,
        rank
    from slice_streams
),

compute_kernels as (
    select
        k.run_id,
        k.rank,
        k.name,
        k.core,
        k.start_ns,
        k.dur_ns,
        s.device_stream,
        r.rank is not null as streams_known,
        case
            when k.core in ('AI_CORE', 'AI_VECTOR_CORE', 'MIX_AIC', 'MIX_AIV') then 'AI cores'
            else coalesce(k.core, '')
        end as engine
    from kernels as k
    left join slice_streams as s
        on
            k.run_id = s.run_id
            and k.rank = s.rank
            and k.name = s.name
            and k.start_ns = s.start_ns
    left join ranks_with_streams as r
        on k.run_id = r.run_id and k.rank = r.rank
    where
        k.run_id in (select checked_runs.run_id from checked_runs)
        and not k.is_comm
        and coalesce(k.work_class, 'compute') = 'compute'
),

consecutive as (
    select
        run_id,
        rank,
        engine,
        device_stream,
        name,
        start_ns,
        dur_ns,
        streams_known,
        lag(name) over by_start as previous_name,
        lag(device_stream) over by_start as previous_device_stream,
        lag(start_ns) over by_start as previous_start_ns,
        lag(dur_ns) over by_start as previous_dur_ns
    from compute_kernels
    window by_start as (
        partition by run_id, rank, engine order by start_ns, dur_ns, name
    )
)

select
    run_id,
    rank,
    engine,
    previous_name,
    previous_start_ns,
    previous_dur_ns,
    name,
    start_ns,
    dur_ns,
    coalesce(previous_device_stream, device_stream) as device_stream,
    least(previous_start_ns + previous_dur_ns, start_ns + dur_ns)
    - start_ns as overlap_ns
from consecutive
where
    not (start_ns = previous_start_ns and dur_ns = previous_dur_ns)
    and (
        device_stream is null
        or previous_device_stream is null
        or device_stream = previous_device_stream
    )
    and (streams_known or name = previous_name)
    and least(previous_start_ns + previous_dur_ns, start_ns + dur_ns) - start_ns
    > greatest(2000, least(dur_ns, previous_dur_ns) / 4)
order by run_id, rank, start_ns
