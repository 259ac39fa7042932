create table if not exists slices (
    run_id varchar not null,
    rank integer not null,
    lane varchar not null,            -- compute, comm, host, overlap, other
    thread varchar,                   -- stream / thread / overlap lane name as written by the profiler
    name varchar not null,
    category varchar,
    start_ns bigint not null,
    dur_ns bigint not null,
    step integer,
    args varchar                      -- json
);
