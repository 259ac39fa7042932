-- one row per run x communication op (names normalised by the op_name macro,
-- pipelines/store/functions.py): whether it is point-to-point, launches, total and waiting time,
-- ranks.
select
    run_id,
    op_name(op) as op,
    coalesce(is_p2p, false) as is_p2p,
    count(*) as count,
    sum(dur_ns)::bigint as total_ns,
    sum(wait_ns)::bigint as wait_ns,
    count(distinct rank) as ranks
from comm_ops
group by all
