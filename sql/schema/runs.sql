-- one row per profiled or simulated run; times are integer nanoseconds everywhere in the warehouse
create table if not exists runs (
    run_id varchar primary key,
    source varchar not null,          -- ascend_pt, ascend_pt_db, kineto, cluster, topology, sim
    origin varchar,                   -- path the run was read from
    content_hash varchar not null,    -- sha256 over the input files; same hash = same run
    model varchar,
    schedule varchar,                 -- cpp, dcpp, vpp, vpp_async, vpp_pack, single
    chunk_size bigint,
    seq_len bigint,
    tp integer,
    pp integer,
    vp integer,
    dp integer,
    world_size integer,
    hardware varchar,
    software varchar,                 -- json object of versions (torch_npu, cann, ...)
    collected_at timestamp,
    replay_of varchar,                -- run_id this simulated run replays, if any
    tags varchar,                     -- json object of user tags
    ingested_at timestamp,
    dropped_rows varchar,             -- json object: reason -> rows dropped by the readers
    segmentation varchar,             -- json: the chunk rule `tracereplay chunks` applied (null: markers)
    attention varchar                 -- dense or sparse (DSA top-k): decides the expected tau_k shape
);
