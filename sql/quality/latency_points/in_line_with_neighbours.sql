-- latency-table points more than 100x above or below both neighbours along the prefix (same
-- table, device, model, tp, attention, operator, batch and chunk size; replicates of a point
-- taken at their median): a time in the wrong unit (µs read as s is 10^6x), which the tau_k fit
-- would take as a measured point. A point at either end of its line has one neighbour and is
-- not judged. Largest real ratio: docs/quality.md
with points as (
    select
        run_id,
        hardware,
        model,
        tp,
        attention,
        operator,
        batch_size,
        tokens,
        prefix_tokens,
        median(time_ns) as time_ns,
        min(line) as first_line
    from latency_points
    where
        run_id in (select checked_runs.run_id from checked_runs)
        and prefix_tokens is not null
    group by
        run_id, hardware, model, tp, attention, operator, batch_size, tokens, prefix_tokens
),

along_prefix as (
    select
        *,
        lag(time_ns) over line_of_points as previous_ns,
        lead(time_ns) over line_of_points as next_ns
    from points
    window line_of_points as (
        partition by run_id, hardware, model, tp, attention, operator, batch_size, tokens
        order by prefix_tokens
    )
)

select
    run_id,
    operator,
    tokens,
    prefix_tokens,
    first_line,
    time_ns,
    previous_ns,
    next_ns
from along_prefix
where
    previous_ns is not null
    and next_ns is not null
    and (
        time_ns > 100 * greatest(previous_ns, next_ns)
        or 100 * time_ns < least(previous_ns, next_ns)
    )
order by run_id, operator, tokens, prefix_tokens
