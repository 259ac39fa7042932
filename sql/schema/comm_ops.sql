create table if not exists comm_ops (
    run_id varchar not null,
    rank integer not null,
    step integer,
    op varchar not null,              -- e.g. hcom_batchSendRecv__128_3_1
    op_type varchar,                  -- e.g. batchSendRecv
    group_name varchar,               -- group hash or name
    group_kind varchar,               -- pp, tp, dp, ... when known
    is_p2p boolean not null,
    peer integer,
    bytes bigint,
    start_ns bigint not null,
    dur_ns bigint not null,
    wait_ns bigint,
    transit_ns bigint,
    sync_ns bigint
);
