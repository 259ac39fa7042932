-- a chunk marker (chunk[req=..,k=..,vs=..]) given twice on one rank at different times: two
-- chunk ranges with one key, which segmentation would sum into one chunk (docs/tau_k.md §1)
select
    run_id,
    rank,
    name,
    count(distinct start_ns) as ranges,
    min(start_ns) as first_start_ns,
    max(start_ns) as last_start_ns
from slices
where
    run_id in (select checked_runs.run_id from checked_runs)
    and lane = 'host'
    and name like 'chunk[%'
group by run_id, rank, name
having count(distinct start_ns) > 1
order by run_id, rank, name
