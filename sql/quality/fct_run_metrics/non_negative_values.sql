-- runs with a negative time, count or rate among their metrics (nulls are metrics a run lacks);
-- exposed comm and total of runs with a step whose bubble exceeds comm_not_overlapped are left to
-- step_breakdown.bubble_within_comm_not_overlapped (they go negative there by construction)
with inconsistent as (
    select distinct run_id
    from int_step_breakdown_preferred
    where bubble_ns > comm_not_overlapped_ns
)

select
    run_id,
    ttft_ns,
    ttft_max_ns,
    makespan_ns,
    compute_ns,
    bubble_ns,
    exposed_comm_ns,
    total_ns,
    prompt_tokens,
    throughput_tok_s,
    n_steps
from fct_run_metrics
where
    run_id in (select checked_runs.run_id from checked_runs)
    and (
        ttft_ns < 0
        or ttft_max_ns < 0
        or makespan_ns < 0
        or compute_ns < 0
        or bubble_ns < 0
        or (exposed_comm_ns < 0 or total_ns < 0)
        and run_id not in (select inconsistent.run_id from inconsistent)
        or prompt_tokens < 0
        or throughput_tok_s < 0
        or n_steps < 1
    )
order by run_id
