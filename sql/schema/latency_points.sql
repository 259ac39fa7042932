-- one row per operator x measured point of an operator-latency table (Vidur's profiling CSVs,
-- or the generic tokens / prefix / time layout of docs/latency_tables.md): the time one
-- operator of one layer took for `tokens` new tokens with `prefix_tokens` already in the KV
-- cache. run_id is the table's id (lt-<sha256 prefix of its path>), the key the store
-- partitions by; a table is no run of `runs`
create table if not exists latency_points (
    run_id varchar not null,
    origin varchar not null,
    content_hash varchar not null,
    layout varchar not null,
    source varchar not null,
    hardware varchar,
    model varchar,
    tp integer,
    attention varchar,
    operator varchar not null,
    tokens bigint not null,
    prefix_tokens bigint,
    batch_size integer,
    time_ns bigint not null,
    mean_ns bigint,
    min_ns bigint,
    max_ns bigint,
    std_ns double,
    line bigint not null,
    replicate integer not null
);

comment on table latency_points is 'One row per operator x point of an operator-latency table.';
comment on column latency_points.run_id is 'table id: lt- and 16 hex digits of the sha256 of its path';
comment on column latency_points.origin is 'resolved path of the table file at ingest time';
comment on column latency_points.content_hash is 'sha256 of the table file';
comment on column latency_points.layout is 'vidur_attention, vidur_mlp or generic (docs/latency_tables.md)';
comment on column latency_points.source is 'who measured it: vidur, or the source column / tag of a generic table';
comment on column latency_points.hardware is 'device the table was measured on (a100, h100, ...)';
comment on column latency_points.model is 'model the operator shapes come from';
comment on column latency_points.tp is 'tensor-parallel degree the shapes were split for';
comment on column latency_points.attention is 'dense or sparse attention, when known';
comment on column latency_points.operator is 'operator name as the table gives it (attn_prefill, mlp_up_proj, ...)';
comment on column latency_points.tokens is 'new tokens of the forward (the prefill chunk size)';
comment on column latency_points.prefix_tokens is 'tokens already in the KV cache; NULL for an operator without one';
comment on column latency_points.batch_size is 'requests in the forward (1 for a prefill chunk of one request)';
comment on column latency_points.time_ns is 'time in ns: the median where given (Vidur), else the time column';
comment on column latency_points.mean_ns is 'mean time over the table''s repetitions, ns';
comment on column latency_points.min_ns is 'fastest repetition, ns';
comment on column latency_points.max_ns is 'slowest repetition, ns';
comment on column latency_points.std_ns is 'standard deviation over the repetitions, ns';
comment on column latency_points.line is 'line of the file (CSV; the header is line 1) or row + 1 (Parquet)';
comment on column latency_points.replicate is '1 for the first row of a point (facts, operator, tokens, prefix, batch)';
