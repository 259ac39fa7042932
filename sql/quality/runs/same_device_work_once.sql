-- measured runs whose device work is another measured run's, kernel for kernel (rank, name,
-- start, duration), though their input bytes differ: one measurement stored twice in another
-- form (a trace kept plain in one folder and gzipped in another, the text and the SQLite export
-- of one rank, when they list the same tasks), so the statistics would count it as two repeats. Byte-identical copies
-- (int_run_copies) are counted once already and left to runs.stored_once. A run's kernels are
-- compared by their count, first start, last end and the sum of a hash of each kernel
with device_work as (
    select
        k.run_id,
        count(*) as kernels,
        min(k.start_ns) as first_start_ns,
        max(k.start_ns + k.dur_ns) as last_end_ns,
        sum(hash(k.rank, k.name, k.start_ns, k.dur_ns)::hugeint) as kernel_hash
    from kernels as k
    inner join runs as r on k.run_id = r.run_id
    where r.replay_of is null
    group by k.run_id
)

select
    a.run_id,
    b.run_id as same_device_work_as,
    a.kernels
from device_work as a
inner join device_work as b
    on
        (a.kernels, a.first_start_ns, a.last_end_ns, a.kernel_hash)
        = (b.kernels, b.first_start_ns, b.last_end_ns, b.kernel_hash)
        and a.run_id != b.run_id
inner join runs as ra on a.run_id = ra.run_id
inner join runs as rb on b.run_id = rb.run_id
where
    a.run_id in (select checked_runs.run_id from checked_runs)
    and ra.content_hash is distinct from rb.content_hash
order by a.run_id, b.run_id
