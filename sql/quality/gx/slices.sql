-- batch of the GX suite `slices`: the columns its rules read, not the names or args (the names
-- of a 986,400-slice run cost 130-190 MB more peak memory: docs/quality.md §Timings);
-- event_hash stands for every column but run_id and rank (DuckDB's 64-bit hash; equal rows
-- hash equal, nulls included), so a stored-twice event is a repeated (run_id, rank, event_hash)
select
    run_id,
    rank,
    lane,
    start_ns,
    dur_ns,
    step,
    hash(lane, thread, name, start_ns, dur_ns, args) as event_hash
from slices
where run_id in (select checked_runs.run_id from checked_runs)
-- ties on start_ns broken by every other column: the same examples on every check
order by run_id, rank, start_ns, event_hash, step
