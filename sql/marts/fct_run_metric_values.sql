-- one row per run x metric (long form of fct_run_metrics): what compare, regressions and the
-- configuration aggregates read. Null metrics (a run without chunks has no TTFT) are left out.
select
    run_id,
    source,
    model,
    schedule,
    seq_len,
    chunk_size,
    tp,
    pp,
    vp,
    hardware,
    collected_at,
    replay_of,
    metric,
    value
from (
    unpivot (
        select
            run_id,
            source,
            model,
            schedule,
            seq_len,
            chunk_size,
            tp,
            pp,
            vp,
            hardware,
            collected_at,
            replay_of,
            ttft_ns::double as ttft_ns,
            ttft_p50_ns::double as ttft_p50_ns,
            ttft_p90_ns::double as ttft_p90_ns,
            ttft_p99_ns::double as ttft_p99_ns,
            ttft_max_ns::double as ttft_max_ns,
            makespan_ns::double as makespan_ns,
            throughput_tok_s::double as throughput_tok_s,
            compute_ns::double as compute_ns,
            bubble_ns::double as bubble_ns,
            exposed_comm_ns::double as exposed_comm_ns,
            total_ns::double as total_ns,
            bubble_ratio::double as bubble_ratio,
            overlap_ratio::double as overlap_ratio,
            n_steps::double as n_steps,
            tau_slope_ns::double as tau_slope_ns,
            tau_intercept_ns::double as tau_intercept_ns,
            tau_ab::double as tau_ab
        from fct_run_metrics
    )
    on columns(* exclude (
        run_id, source, model, schedule, seq_len, chunk_size, tp, pp, vp, hardware,
        collected_at, replay_of
    ))
    into name metric value value
)
