create table if not exists ranks (
    run_id varchar not null,
    rank integer not null,
    device_id integer,
    pp_stage integer,
    groups varchar,                   -- json list of {"name": "pp", "ranks": [0, 2]}
    source_path varchar
);
