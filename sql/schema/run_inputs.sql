-- one row per input file of a run: what the run was read from, byte for byte; an input file
-- belongs to at most one current run (docs/run_identity.md)
create table if not exists run_inputs (
    run_id varchar not null,
    path varchar not null,
    bytes bigint not null,
    sha256 varchar not null
);

comment on table run_inputs is 'One row per input file of a run: path, size and sha256.';
comment on column run_inputs.run_id is 'run the file belongs to';
comment on column run_inputs.path is 'resolved path of the file at ingest time';
comment on column run_inputs.bytes is 'file size in bytes';
comment on column run_inputs.sha256 is 'sha256 of the file content';
