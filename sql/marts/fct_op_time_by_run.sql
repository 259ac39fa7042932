-- one row per run x device op (kernel or communication op, names normalised): launches and total
-- device time per run, summed over ranks. Normalisation (docs/metrics.md §op names): HCCL ops
-- `hcom_<op>__<group hash>_<index>[_<n>]` become `hcom_<op>`, so that one op is not split by its
-- group hash or launch index; `atomic_memset-<ids>` becomes `atomic_memset`; other names are kept
-- (the macro op_name, pipelines/sql_functions.py, shared with `tracereplay show`).
select
    run_id,
    case
        when is_comm then 'comm'
        when work_class in ('memcpy', 'memset') then work_class
        else 'kernel'
    end as kind,
    op_name(name) as op,
    count(*) as n_launches,
    sum(dur_ns) as total_ns
from kernels
group by all
