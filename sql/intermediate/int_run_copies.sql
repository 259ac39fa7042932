-- one row per measured run whose input bytes (content_hash) equal those of a measured run
-- ingested before it (ties: the smaller run_id first): the same measurement stored twice, say a
-- copied run folder. The statistics (tau_k points, run selections) count a measurement once, by
-- the earliest copy, so a copy is never a second repeat (docs/run_identity.md).
with ranked as (
    select
        run_id,
        content_hash,
        first_value(run_id) over (
            partition by content_hash order by ingested_at nulls last, run_id
        ) as copy_of
    from runs
    where replay_of is null and content_hash is not null
)

select
    run_id,
    content_hash,
    copy_of
from ranked
where run_id != copy_of
