-- one row per profiled or simulated run; times are integer nanoseconds everywhere in the warehouse
create table if not exists runs (
    run_id varchar primary key,
    source varchar not null,
    origin varchar,
    content_hash varchar not null,
    model varchar,
    schedule varchar,
    chunk_size bigint,
    seq_len bigint,
    tp integer,
    pp integer,
    vp integer,
    dp integer,
    world_size integer,
    hardware varchar,
    software varchar,
    collected_at timestamp,
    replay_of varchar,
    tags varchar,
    ingested_at timestamp,
    dropped_rows varchar,
    segmentation varchar,
    attention varchar
);

comment on table runs is 'One row per profiled or simulated run (configuration, origin, content hash).';
comment on column runs.run_id is 'identity of the run (docs/run_identity.md)';
comment on column runs.source is 'reader or writer: ascend_pt, ascend_pt_db, kineto, cluster, topology, sim';
comment on column runs.origin is 'path the run was read from';
comment on column runs.content_hash is 'sha256 over the input files; same hash = same run';
comment on column runs.model is 'model name, when known';
comment on column runs.schedule is 'pipeline schedule: cpp, dcpp, vpp, vpp_async, vpp_pack, single';
comment on column runs.chunk_size is 'prefill chunk size (tokens)';
comment on column runs.seq_len is 'request length (tokens)';
comment on column runs.tp is 'tensor-parallel degree';
comment on column runs.pp is 'pipeline-parallel degree';
comment on column runs.vp is 'virtual stages per pipeline rank';
comment on column runs.dp is 'data-parallel degree';
comment on column runs.world_size is 'number of ranks';
comment on column runs.hardware is 'accelerator model';
comment on column runs.software is 'json object of versions (torch_npu, cann, ...)';
comment on column runs.collected_at is 'when the profile was taken';
comment on column runs.replay_of is 'run_id this simulated run replays, if any';
comment on column runs.tags is 'json object of user tags';
comment on column runs.ingested_at is 'when the run was written to the warehouse';
comment on column runs.dropped_rows is 'json object: reason -> rows dropped by the readers';
comment on column runs.segmentation is 'json: the chunk rule `tracereplay chunks` applied (null: chunk markers)';
comment on column runs.attention is 'dense or sparse (DSA top-k): decides the expected tau_k shape';
