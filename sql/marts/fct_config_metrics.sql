-- one row per configuration (source, model, schedule, seq_len, chunk_size, tp, pp, vp, hardware) x
-- metric over its measured runs (reruns left out): n, mean, median, sample standard deviation
-- and a 95 % Student-t interval of the mean (student_t_quantile is scipy.stats.t.ppf, registered
-- by pipelines/analysis/runs/run_metrics.py before this file runs; null for n < 2).
select
    source,
    model,
    schedule,
    seq_len,
    chunk_size,
    tp,
    pp,
    vp,
    hardware,
    metric,
    count(*) as n,
    avg(value) as mean,
    median(value) as median,
    stddev_samp(value) as sd,
    avg(value) - student_t_quantile(0.975, count(*) - 1) * stddev_samp(value) / sqrt(count(*))
        as ci_lo,
    avg(value) + student_t_quantile(0.975, count(*) - 1) * stddev_samp(value) / sqrt(count(*))
        as ci_hi
from fct_run_metric_values
where replay_of is null
group by all
