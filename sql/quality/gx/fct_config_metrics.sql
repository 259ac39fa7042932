-- batch of the GX suite `fct_config_metrics`: the configurations of the checked runs
select
    model,
    schedule,
    seq_len,
    chunk_size,
    metric,
    n
from fct_config_metrics
where
    (model, schedule, seq_len, chunk_size) in (
        select (v.model, v.schedule, v.seq_len, v.chunk_size)
        from fct_run_metric_values as v
        where v.run_id in (select checked_runs.run_id from checked_runs)
    )
order by model, schedule, seq_len, chunk_size, metric
