-- one row per run x device op (kernel or communication op, names normalised): launches and total
-- device time per run, summed over ranks. Normalisation (docs/metrics.md §op names): HCCL ops
-- `hcom_<op>__<group hash>_<index>[_<n>]` become `hcom_<op>`, so that one op is not split by its
-- group hash or launch index; `atomic_memset-<ids>` becomes `atomic_memset`; other names are kept.
select
    run_id,
    case when is_comm then 'comm' else 'kernel' end as kind,
    case
        when regexp_matches(name, '^hcom_[A-Za-z0-9]+__') then regexp_extract(name, '^(hcom_[A-Za-z0-9]+)__', 1)
        when regexp_matches(name, '^atomic_memset-') then 'atomic_memset'
        else name
    end as op,
    count(*) as n_launches,
    sum(dur_ns) as total_ns
from kernels
group by all
