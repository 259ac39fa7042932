create table if not exists ranks (
    run_id varchar not null,
    rank integer not null,
    device_id integer,
    pp_stage integer,
    groups varchar,
    source_path varchar
);

comment on table ranks is 'One row per rank of a run (device, pipeline stage, groups).';
comment on column ranks.run_id is 'run of the rank';
comment on column ranks.rank is 'global rank';
comment on column ranks.device_id is 'accelerator device id on its host';
comment on column ranks.pp_stage is 'pipeline stage of the rank';
comment on column ranks.groups is 'json list of {"name": "pp", "ranks": [0, 2]}';
comment on column ranks.source_path is 'profiler folder or file the rank was read from';
