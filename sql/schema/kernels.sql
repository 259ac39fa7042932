create table if not exists kernels (
    run_id varchar not null,
    rank integer not null,
    step integer,
    name varchar not null,
    type varchar,
    core varchar,                     -- accelerator core; HCCL/COMMUNICATION rows are communication
    start_ns bigint not null,
    dur_ns bigint not null,
    wait_ns bigint,
    is_comm boolean not null
);
