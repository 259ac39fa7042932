-- ranks named in a pp group of ranks.groups (JSON list of {"name", "ranks"}) with no row in ranks
with pp_members as (
    select distinct
        r.run_id,
        r.rank as listed_by,
        cast(m.value as integer) as member
    from ranks as r,
        json_each(r.groups) as g,
        json_each(json_extract(g.value, '$.ranks')) as m
    where
        r.run_id in (select checked_runs.run_id from checked_runs)
        and r.groups is not null
        and json_extract_string(g.value, '$.name') = 'pp'
)

select
    p.run_id,
    p.member as missing_rank,
    min(p.listed_by) as listed_by
from pp_members as p
where
    not exists (
        select 1 from ranks as r
        where r.run_id = p.run_id and r.rank = p.member
    )
group by p.run_id, p.member
order by p.run_id, p.member
