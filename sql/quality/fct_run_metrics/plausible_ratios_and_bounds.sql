-- runs whose metrics contradict each other: overlap or bubble ratio outside [0, 1], mean TTFT above the
-- longest TTFT, TTFT percentiles out of order (p50 <= p90 <= p99 <= max), or the longest TTFT
-- above the makespan of all the run's chunks
select
    run_id,
    overlap_ratio,
    bubble_ratio,
    ttft_ns,
    ttft_p50_ns,
    ttft_p90_ns,
    ttft_p99_ns,
    ttft_max_ns,
    makespan_ns
from fct_run_metrics
where
    run_id in (select checked_runs.run_id from checked_runs)
    and (
        overlap_ratio < 0
        or overlap_ratio > 1
        or bubble_ratio < 0
        or bubble_ratio > 1
        or ttft_ns > ttft_max_ns
        or ttft_p50_ns > ttft_p90_ns
        or ttft_p90_ns > ttft_p99_ns
        or ttft_p99_ns > ttft_max_ns
        or ttft_max_ns > makespan_ns
    )
order by run_id
