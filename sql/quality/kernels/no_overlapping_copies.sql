-- kernels that start inside the first half of an earlier kernel of the same rank, name and
-- duration: the same device task stored twice, shifted (a writer that duplicated a batch a few
-- µs later), which would be counted twice. None in the real exports here (docs/quality.md)
with ordered as (
    select
        run_id,
        rank,
        name,
        start_ns,
        dur_ns,
        lag(start_ns) over (
            partition by run_id, rank, name, dur_ns order by start_ns
        ) as previous_start_ns
    from kernels
    where run_id in (select checked_runs.run_id from checked_runs)
)

select
    run_id,
    rank,
    name,
    previous_start_ns,
    start_ns,
    dur_ns
from ordered
where
    start_ns > previous_start_ns
    and start_ns - previous_start_ns < dur_ns / 2
order by run_id, rank, start_ns
