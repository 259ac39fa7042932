-- one row per input file of a run: what the run was read from, byte for byte; an input file
-- belongs to at most one current run (docs/run_identity.md)
create table if not exists run_inputs (
    run_id varchar not null,
    path varchar not null,            -- resolved path of the file at ingest time
    bytes bigint not null,
    sha256 varchar not null
);
