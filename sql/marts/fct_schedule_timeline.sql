-- one row per span of a run's schedule timeline, times in ms from the run's first chunk start:
-- kind 'chunk' (a chunk on its rank and virtual stage) and kind 'bubble' (a gap on a rank
-- between the end of one of its chunks and the start of its next, over all its virtual
-- stages; gaps shorter than 1 µs are left out)
with spans as (
    select
        c.run_id,
        c.rank,
        c.vstage,
        c.request_id,
        c.chunk_idx,
        c.start_ns - min(c.start_ns) over (partition by c.run_id) as start_rel_ns,
        c.end_ns - min(c.start_ns) over (partition by c.run_id) as end_rel_ns
    from chunks as c
),

gaps as (
    select
        run_id,
        rank,
        start_rel_ns as gap_end_ns,
        max(end_rel_ns) over (
            partition by run_id, rank order by start_rel_ns, end_rel_ns
            rows between unbounded preceding and 1 preceding
        ) as gap_start_ns
    from spans
)

select
    'chunk' as kind,
    run_id,
    rank,
    vstage,
    request_id,
    chunk_idx,
    start_rel_ns / 1e6 as start_ms,
    end_rel_ns / 1e6 as end_ms
from spans
union all
select
    'bubble' as kind,
    run_id,
    rank,
    null as vstage,
    null as request_id,
    null as chunk_idx,
    gap_start_ns / 1e6 as start_ms,
    gap_end_ns / 1e6 as end_ms
from gaps
where gap_end_ns - gap_start_ns >= 1000
