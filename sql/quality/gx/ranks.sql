-- batch of the GX suite `ranks`: the checked runs' ranks
select
    run_id,
    rank,
    pp_stage
from ranks
where run_id in (select checked_runs.run_id from checked_runs)
order by run_id, rank
