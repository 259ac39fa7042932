-- batch of the GX suite `fct_run_metrics`: the checked runs' metrics; exposed comm and total are
-- null for runs with a step whose bubble exceeds comm_not_overlapped (the simulator fault the
-- warning step_breakdown.bubble_within_comm_not_overlapped reports: docs/quality.md)
with inconsistent as (
    select distinct run_id
    from int_step_breakdown_preferred
    where bubble_ns > comm_not_overlapped_ns
)

select
    m.run_id,
    m.ttft_ns,
    m.ttft_p50_ns,
    m.ttft_p90_ns,
    m.ttft_p99_ns,
    m.ttft_max_ns,
    m.makespan_ns,
    m.compute_ns,
    m.bubble_ns,
    m.prompt_tokens,
    m.throughput_tok_s,
    m.n_steps,
    m.overlap_ratio,
    m.bubble_ratio,
    case when i.run_id is null then m.exposed_comm_ns end as exposed_comm_ns,
    case when i.run_id is null then m.total_ns end as total_ns
from fct_run_metrics as m
left join inconsistent as i on m.run_id = i.run_id
where m.run_id in (select checked_runs.run_id from checked_runs)
order by m.run_id
