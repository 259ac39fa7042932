-- runs whose input bytes equal an earlier run's (int_run_copies): the same measurement stored
-- twice, say a copied folder; the statistics count it once, by the earlier run
select
    c.run_id,
    c.copy_of,
    c.content_hash
from int_run_copies as c
where c.run_id in (select checked_runs.run_id from checked_runs)
order by c.run_id
