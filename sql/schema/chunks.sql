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
    busy_ns bigint not null,
    batch_prefills integer,
    batch_decodes integer
);

comment on table chunks is 'One row per prefill chunk and virtual stage: its window and device busy time (tau_k).';
comment on column chunks.run_id is 'run of the chunk';
comment on column chunks.rank is 'rank that ran the chunk';
comment on column chunks.vstage is 'virtual pipeline stage';
comment on column chunks.request_id is 'request the chunk belongs to';
comment on column chunks.chunk_idx is 'k: index of the chunk within its request, from 0';
comment on column chunks.tokens is 'tokens in the chunk';
comment on column chunks.prefix_tokens is 'tokens of the request before the chunk';
comment on column chunks.start_ns is 'chunk window start (ns)';
comment on column chunks.end_ns is 'chunk window end (ns)';
comment on column chunks.busy_ns is 'device busy time inside [start_ns, end_ns): tau_k (ns)';
comment on column chunks.batch_prefills is
'engine forwards (vLLM, SGLang): prefill pieces batched in the forward; null for project markers';
comment on column chunks.batch_decodes is
'engine forwards: decodes batched with the prefill; a row with > 1 piece or any decode is no tau_k point';
