-- ranks of a run that recorded no device compute work: no kernel and no compute slice (a rank
-- folder that kept only summaries, e.g. step_trace_time.csv, communication.json and analysis.db,
-- or a rank known from a cluster summary alone). Its breakdown rows come from the summaries;
-- kernels, chunks and tau_k of the run come from the other ranks only (docs/step_breakdown.md).
select
    r.run_id,
    r.rank,
    r.source_path
from ranks as r
where
    r.run_id in (select checked_runs.run_id from checked_runs)
    and not exists (
        select 1 from kernels as k
        where k.run_id = r.run_id and k.rank = r.rank
    )
    and not exists (
        select 1 from slices as s
        where s.run_id = r.run_id and s.rank = r.rank and s.lane = 'compute'
    )
order by r.run_id, r.rank
