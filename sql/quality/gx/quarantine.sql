-- batch of the GX suite `quarantine`: every quarantined input (the table is not per run)
select
    path,
    reason,
    detail,
    seen_at
from quarantine
order by seen_at, path
