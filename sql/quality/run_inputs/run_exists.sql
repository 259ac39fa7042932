-- input rows whose run is not in runs (left behind by a removed run)
select
    i.run_id,
    i.path
from run_inputs as i
where
    i.run_id in (select checked_runs.run_id from checked_runs)
    and not exists (
        select 1 from runs as r
        where r.run_id = i.run_id
    )
order by i.run_id, i.path
