-- input files claimed by more than one current run (docs/run_identity.md: at most one)
select
    path,
    count(distinct run_id) as runs,
    string_agg(distinct run_id, ' ') as run_ids
from run_inputs
where run_id in (select checked_runs.run_id from checked_runs)
group by path
having count(distinct run_id) > 1
order by path
