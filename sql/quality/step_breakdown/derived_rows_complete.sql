-- derived rows judged incomplete at ingest (too little input or disagreeing with the profiler)
select
    run_id,
    rank,
    step,
    origin,
    incomplete_reason
from step_breakdown
where run_id in (select checked_runs.run_id from checked_runs) and complete = false
order by run_id, rank, step, origin
