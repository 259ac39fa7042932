-- one row per stored run: the workload a schedule timeline compares (the configuration's model,
-- seq_len, chunk_size, on one hardware, read by one reader) and whether the run has chunks.
-- A rerun (replay_of) is of its measured run's hardware and reader. `model` is the
-- configuration's (stg_run_configuration): an untagged run is a workload of its own.
-- dashboards/data.py timeline_workload reads it.
select
    r.run_id,
    r.replay_of,
    r.model,  -- noqa: RF04
    r.seq_len,
    r.chunk_size,
    r.schedule,
    coalesce(o.hardware, r.hardware) as hardware,
    coalesce(o.source, r.source) as source,  -- noqa: RF04
    r.replay_of is not null as is_replay,
    exists(
        select 1 from chunks as c
        where c.run_id = r.run_id
    ) as has_chunks
from stg_run_configuration as r
left join stg_run_configuration as o on r.replay_of = o.run_id
