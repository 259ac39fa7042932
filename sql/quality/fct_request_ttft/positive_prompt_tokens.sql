-- requests whose prompt, counted on the first virtual stage, is not a positive token count.
-- A run cut into chunks by its ProfilerStep windows (segmentation rule profiler_steps) has no
-- token counts by construction: a NULL prompt there is what the data can hold, not an error
select
    t.run_id,
    t.request_id,
    t.n_chunks,
    t.prompt_tokens
from fct_request_ttft as t
left join runs as r on t.run_id = r.run_id
where
    t.run_id in (select checked_runs.run_id from checked_runs)
    and (
        t.prompt_tokens <= 0
        or (
            t.prompt_tokens is null
            and coalesce(json_extract_string(r.segmentation, '$.rule'), '') != 'profiler_steps'
        )
    )
order by t.run_id, t.request_id
