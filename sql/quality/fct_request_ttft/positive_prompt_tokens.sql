-- requests whose prompt, counted on the first virtual stage, is not a positive token count
select
    run_id,
    request_id,
    n_chunks,
    prompt_tokens
from fct_request_ttft
where
    run_id in (select checked_runs.run_id from checked_runs)
    and (prompt_tokens is null or prompt_tokens <= 0)
order by run_id, request_id
