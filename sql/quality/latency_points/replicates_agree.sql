-- latency-table points given more than once (the same table, device, model, tp, attention,
-- operator, batch, chunk size and prefix) whose slowest time is more than 20x the fastest:
-- one of them is in the wrong unit or from another setup, and the tau_k fit would average the
-- two. Real Vidur tables repeat points as exact copies; largest real spread: docs/quality.md
select
    run_id,
    operator,
    tokens,
    prefix_tokens,
    batch_size,
    count(*) as replicates,
    min(time_ns) as fastest_ns,
    max(time_ns) as slowest_ns,
    min(line) as first_line
from latency_points
where run_id in (select checked_runs.run_id from checked_runs)
group by
    run_id, hardware, model, tp, attention, operator, batch_size, tokens, prefix_tokens
having count(*) > 1 and max(time_ns) > 20 * min(time_ns)
order by run_id, operator, tokens, prefix_tokens
