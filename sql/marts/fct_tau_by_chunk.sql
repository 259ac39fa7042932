-- per run x virtual stage x chunk index: tau_k over the run's requests (ns), with the run's
-- configuration; partial remainder chunks are kept but flagged
select
    run_id,
    source,
    model,
    schedule,
    chunk_size,
    seq_len,
    tp,
    pp,
    vp,
    hardware,
    vstage,
    chunk_idx,
    min(rank) as rank,
    count(*) as n_requests,
    avg(tau_ns) as tau_mean_ns,
    min(tau_ns) as tau_min_ns,
    max(tau_ns) as tau_max_ns,
    stddev_samp(tau_ns) as tau_sd_ns,
    avg(tokens) as tokens_mean,
    avg(prefix_tokens) as prefix_mean,
    bool_or(is_partial) as any_partial
from int_chunk_tau
group by all
order by run_id, vstage, chunk_idx
