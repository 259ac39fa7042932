-- ranks stored more than once for one run
select
    run_id,
    rank,
    count(*) as copies
from ranks
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank
having count(*) > 1
order by run_id, rank
