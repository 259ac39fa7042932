create table if not exists chunks (
    run_id varchar not null,
    rank integer not null,
    vstage integer not null,
    request_id varchar not null,
    chunk_idx integer not null,
    tokens bigint,
    prefix_tokens bigint,
    start_ns bigint not null,
    end_ns bigint not null,
    busy_ns bigint not null           -- device busy time inside [start_ns, end_ns): tau_k
);
