-- one row per run x rank x virtual stage: its chunks, requests, first and last chunk index and
-- busy time (mean, min, max), as `tracereplay show` prints them.
select
    run_id,
    rank,
    vstage,
    count(*) as chunks,
    count(distinct request_id) as requests,
    min(chunk_idx) as first_k,
    max(chunk_idx) as last_k,
    avg(busy_ns) as mean_busy_ns,
    min(busy_ns) as min_busy_ns,
    max(busy_ns) as max_busy_ns
from chunks
group by run_id, rank, vstage
