-- device tasks (compute and comm lanes) that start inside an earlier task of the same rank and
-- stream with the same name, duration and args: the same task stored twice, shifted (a writer
-- that repeated its events a few µs later), which every sum would count twice. A stream runs
-- one task at a time, but the HCCL sub-tasks of one task do overlap on the communication stream
-- (real Level1 export: SDMA / Write Value pairs 280-820 ns apart); their args differ in
-- "Subtask Id", so they are not copies (docs/quality.md)
with device_tasks as (
    select
        run_id,
        rank,
        lane,
        thread,
        name,
        start_ns,
        dur_ns,
        lag(start_ns) over (
            partition by run_id, rank, lane, thread, name, dur_ns, hash(args)
            order by start_ns
        ) as previous_start_ns
    from slices
    where
        run_id in (select checked_runs.run_id from checked_runs)
        and lane in ('compute', 'comm')
)

select
    run_id,
    rank,
    lane,
    thread,
    name,
    previous_start_ns,
    start_ns,
    dur_ns
from device_tasks
where
    start_ns > previous_start_ns
    and start_ns - previous_start_ns < dur_ns
order by run_id, rank, lane, thread, start_ns
