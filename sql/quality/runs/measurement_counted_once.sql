-- measured runs with the same input bytes (content_hash) that both reach the tau_k points the
-- fit pools (int_chunk_tau): one measurement counted as two repeats
with pooled as (
    select distinct
        t.run_id,
        r.content_hash
    from int_chunk_tau as t
    inner join runs as r on t.run_id = r.run_id
    where t.replay_of is null
)

select
    p.run_id,
    p.content_hash
from pooled as p
where
    p.run_id in (select checked_runs.run_id from checked_runs)
    and p.content_hash in (
        select q.content_hash from pooled as q
        group by q.content_hash
        having count(*) > 1
    )
order by p.content_hash, p.run_id
