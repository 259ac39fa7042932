create table if not exists slices (
    run_id varchar not null,
    rank integer not null,
    lane varchar not null,
    thread varchar,
    name varchar not null,
    category varchar,
    start_ns bigint not null,
    dur_ns bigint not null,
    step integer,
    args varchar
);

comment on table slices is 'Device and host events of every rank (compute, comm, host, overlap lanes).';
comment on column slices.run_id is 'run of the event';
comment on column slices.rank is 'rank of the event';
comment on column slices.lane is 'compute, comm, host, overlap, other';
comment on column slices.thread is 'stream / thread / overlap lane name as written by the profiler';
comment on column slices.name is 'event name (kernel, HCCL op, host marker)';
comment on column slices.category is 'profiler category of the event';
comment on column slices.start_ns is 'start (ns)';
comment on column slices.dur_ns is 'duration (ns)';
comment on column slices.step is 'profiler step the event falls in';
comment on column slices.args is 'json object of the event arguments';
