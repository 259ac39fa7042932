-- configuration x metric rows where the 95 % interval does not hold the mean (ci_lo <= mean <=
-- ci_hi, 1e-9 relative slack for rounding), or where n >= 2 and there is no interval
select
    model,
    schedule,
    seq_len,
    chunk_size,
    metric,
    n,
    ci_lo,
    mean,
    ci_hi
from fct_config_metrics
where
    (model, schedule, seq_len, chunk_size) in (
        select (v.model, v.schedule, v.seq_len, v.chunk_size)
        from fct_run_metric_values as v
        where v.run_id in (select checked_runs.run_id from checked_runs)
    )
    and (
        (n >= 2 and (ci_lo is null or ci_hi is null))
        or ci_lo > mean + 1e-9 * abs(mean)
        or ci_hi < mean - 1e-9 * abs(mean)
    )
order by model, schedule, seq_len, chunk_size, metric
