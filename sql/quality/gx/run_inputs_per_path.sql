-- batch of the GX suite `run_inputs_per_path`: per input path, how many of the checked runs
-- list it (an input file belongs to at most one current run: docs/run_identity.md), in run_id
-- order (the same text on every check)
select
    path,
    count(distinct run_id) as runs,
    string_agg(distinct run_id, ' ' order by run_id) as run_ids
from run_inputs
where run_id in (select checked_runs.run_id from checked_runs)
group by path
order by path
