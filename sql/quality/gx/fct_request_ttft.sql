-- batch of the GX suite `fct_request_ttft`: the checked runs' requests
select
    run_id,
    request_id,
    n_chunks,
    first_start_ns,
    last_end_ns,
    ttft_ns
from fct_request_ttft
where run_id in (select checked_runs.run_id from checked_runs)
order by run_id, request_id
