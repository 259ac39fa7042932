-- requests without a positive time to first token (null: no chunk on the run's last stage)
select
    run_id,
    request_id,
    n_chunks,
    first_start_ns,
    last_end_ns,
    ttft_ns
from fct_request_ttft
where
    run_id in (select checked_runs.run_id from checked_runs)
    and (ttft_ns is null or ttft_ns <= 0)
order by run_id, request_id
