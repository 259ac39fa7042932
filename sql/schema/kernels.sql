create table if not exists kernels (
    run_id varchar not null,
    rank integer not null,
    step integer,
    name varchar not null,
    type varchar,
    core varchar,
    start_ns bigint not null,
    dur_ns bigint not null,
    wait_ns bigint,
    is_comm boolean not null,
    work_class varchar
);

comment on table kernels is 'Rows of kernel_details per rank (name, type, core, start, duration, wait).';
comment on column kernels.run_id is 'run of the kernel';
comment on column kernels.rank is 'rank of the kernel';
comment on column kernels.step is 'profiler step';
comment on column kernels.name is 'kernel name';
comment on column kernels.type is 'operator type';
comment on column kernels.core is 'accelerator core; HCCL/COMMUNICATION rows are communication';
comment on column kernels.start_ns is 'start (ns)';
comment on column kernels.dur_ns is 'duration (ns)';
comment on column kernels.wait_ns is 'wait before the kernel (ns)';
comment on column kernels.is_comm is 'true for communication rows';
comment on column kernels.work_class is
'compute, collective, p2p, memcpy, memset or other (pipelines/vocabulary/device_work.py, docs/device_work.md)';
