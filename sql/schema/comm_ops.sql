create table if not exists comm_ops (
    run_id varchar not null,
    rank integer not null,
    step integer,
    op varchar not null,
    op_type varchar,
    group_name varchar,
    group_kind varchar,
    is_p2p boolean not null,
    peer integer,
    bytes bigint,
    start_ns bigint not null,
    dur_ns bigint not null,
    wait_ns bigint,
    transit_ns bigint,
    sync_ns bigint
);

comment on table comm_ops is 'Collective and point-to-point operations per rank.';
comment on column comm_ops.run_id is 'run of the operation';
comment on column comm_ops.rank is 'rank of the operation';
comment on column comm_ops.step is 'profiler step';
comment on column comm_ops.op is 'operation name, e.g. hcom_batchSendRecv__128_3_1';
comment on column comm_ops.op_type is 'operation type, e.g. batchSendRecv';
comment on column comm_ops.group_name is 'communication group hash or name';
comment on column comm_ops.group_kind is 'pp, tp, dp, ... when known';
comment on column comm_ops.is_p2p is 'true for point-to-point (send, receive, batchSendRecv)';
comment on column comm_ops.peer is 'peer rank of a point-to-point operation';
comment on column comm_ops.bytes is 'bytes moved';
comment on column comm_ops.start_ns is 'start (ns)';
comment on column comm_ops.dur_ns is 'duration (ns)';
comment on column comm_ops.wait_ns is 'waiting inside the operation (ns)';
comment on column comm_ops.transit_ns is 'transfer time (ns)';
comment on column comm_ops.sync_ns is 'synchronisation time (ns)';
