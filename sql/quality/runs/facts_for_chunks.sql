-- runs that have chunks but lack a fact the tau_k fit groups by (model, schedule, chunk_size, seq_len)
select
    r.run_id,
    r.model,
    r.schedule,
    r.chunk_size,
    r.seq_len
from runs as r
where
    r.run_id in (select checked_runs.run_id from checked_runs)
    and exists (
        select 1 from chunks as c
        where c.run_id = r.run_id
    )
    and (r.model is null or r.schedule is null or r.chunk_size is null or r.seq_len is null)
order by r.run_id
