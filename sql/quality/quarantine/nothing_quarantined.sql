-- inputs ingest could not read (every run selection: quarantine rows belong to no run)
select
    path,
    reason,
    detail,
    seen_at
from quarantine
order by seen_at, path
