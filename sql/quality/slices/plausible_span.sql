-- ranks whose slices span more than a week: one timestamp read in the wrong unit (ms for µs,
-- ns for µs) stretches a rank over years, and every step window and breakdown with it. The
-- longest real export here spans 42 s (docs/quality.md)
select
    run_id,
    rank,
    min(start_ns) as first_ns,
    max(start_ns + dur_ns) as last_ns,
    (max(start_ns + dur_ns) - min(start_ns)) / 86400e9 as span_days
from slices
where run_id in (select checked_runs.run_id from checked_runs)
group by run_id, rank
having max(start_ns + dur_ns) - min(start_ns) > 7 * 86400e9
order by run_id, rank
