-- one row per run x request: time to first token of the prefill (docs/metrics.md §ttft). The
-- request's last chunk finishing on the run's last virtual stage, from the first start of any of
-- its chunks on any stage (the chunks table carries no arrival time, so the first chunk's start
-- stands for it). Prompt tokens: the request's tokens on the first virtual stage.
with bounds as (
    select
        run_id,
        min(vstage) as first_vstage,
        max(vstage) as last_vstage
    from chunks
    group by run_id
)

select
    c.run_id,
    c.request_id,
    count(distinct c.chunk_idx) as n_chunks,
    sum(c.tokens) filter (where c.vstage = b.first_vstage) as prompt_tokens,
    min(c.start_ns) as first_start_ns,
    max(c.end_ns) filter (where c.vstage = b.last_vstage) as last_end_ns,
    max(c.end_ns) filter (where c.vstage = b.last_vstage) - min(c.start_ns) as ttft_ns
from chunks as c
inner join bounds as b on c.run_id = b.run_id
group by c.run_id, c.request_id
