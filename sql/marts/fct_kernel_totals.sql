-- one row per run x compute kernel name: launches, total and longest device time, ranks. From the
-- run's kernel rows (kernel_details, or the trace's classified kernels) without communication,
-- memcpy and memset; a run with no such row falls back to its compute-lane trace slices (copies,
-- memsets and annotations left out). `from` says which.
with kernel_rows as (
    select
        run_id,
        name,
        count(*) as count,
        sum(dur_ns)::bigint as total_ns,
        max(dur_ns) as max_ns,
        count(distinct rank) as ranks,
        'kernel_details' as "from"
    from kernels
    where
        not coalesce(is_comm, false)
        and coalesce(work_class, 'compute') not in ('memcpy', 'memset')
    group by run_id, name
),

trace_rows as (
    select
        run_id,
        name,
        count(*) as count,
        sum(dur_ns)::bigint as total_ns,
        max(dur_ns) as max_ns,
        count(distinct rank) as ranks,
        'trace' as "from"
    from slices
    where
        lane = 'compute'
        and coalesce(category, '') not in ('gpu_memcpy', 'gpu_memset', 'gpu_user_annotation')
        and run_id not in (select distinct k.run_id from kernel_rows as k)
    group by run_id, name
)

select * from kernel_rows
union all
select * from trace_rows
