-- tau_k points of operator-latency tables (latency_points), in the columns of int_chunk_tau plus
-- `operator`: tau_k = t(c, p = k * c), one prefill chunk of c tokens after k earlier chunks of
-- one request (batch of one). Curves (docs/latency_tables.md):
-- * attention: the attention kernel alone (Vidur's attn_prefill);
-- * layer: every per-layer operator of the table's attention file at (c, p) plus the rest of the
--   layer measured without a prefix at c tokens (Vidur's mlp.csv: projections, norms, rope, MLP,
--   residual add; the embedding runs once per model and is left out), matched on source,
--   hardware, model and tp: what a pipeline stage runs per layer;
-- * a generic or aiconfigurator table's operators under their own names (one file may hold
--   several models, tp degrees or devices: each is its own curve).
-- Repeated rows of one point are kept as replicates (request_id rep<n>); schedule, pp, vp and
-- replay_of are NULL: a table is no run.
with prefill as (
    select
        p.run_id,
        p.layout,
        p.source,
        p.hardware,
        p.model,
        p.tp,
        p.attention,
        p.operator,
        p.tokens,
        p.prefix_tokens,
        p.replicate,
        p.time_ns
    from latency_points as p
    where
        coalesce(p.batch_size, 1) = 1
        and p.prefix_tokens is not null
        and p.prefix_tokens % p.tokens = 0
),

rest_of_layer as (
    select
        m.source,
        m.hardware,
        m.model,
        m.tp,
        m.tokens,
        sum(m.time_ns) as rest_ns
    from (
        select
            source,
            hardware,
            model,
            tp,
            operator,
            tokens,
            avg(time_ns) as time_ns
        from latency_points
        where layout = 'vidur_mlp' and operator <> 'emb'
        group by all
    ) as m
    group by all
),

attention_layer as (
    select
        run_id,
        source,
        hardware,
        model,
        tp,
        attention,
        tokens,
        prefix_tokens,
        replicate,
        sum(time_ns) as time_ns
    from prefill
    where layout = 'vidur_attention'
    group by all
),

points as (
    select
        run_id,
        source,
        hardware,
        model,
        tp,
        attention,
        'attention' as operator,  -- noqa: RF04
        tokens,
        prefix_tokens,
        replicate,
        time_ns
    from prefill
    where layout = 'vidur_attention' and operator = 'attn_prefill'
    union all
    select
        a.run_id,
        a.source,
        a.hardware,
        a.model,
        a.tp,
        a.attention,
        'layer' as operator,  -- noqa: RF04
        a.tokens,
        a.prefix_tokens,
        a.replicate,
        a.time_ns + r.rest_ns as time_ns
    from attention_layer as a
    inner join rest_of_layer as r
        on
            a.source = r.source
            and a.tokens = r.tokens
            and a.hardware is not distinct from r.hardware
            and a.model is not distinct from r.model
            and a.tp is not distinct from r.tp
    union all
    select
        run_id,
        source,
        hardware,
        model,
        tp,
        attention,
        operator,
        tokens,
        prefix_tokens,
        replicate,
        time_ns
    from prefill
    where layout in ('generic', 'aiconfigurator')
)

select  -- noqa: ST06
    run_id,
    source,
    model,
    cast(null as varchar) as schedule,
    tokens as chunk_size,
    max(prefix_tokens + tokens) over curve as seq_len,
    tp,
    cast(null as integer) as pp,
    cast(null as integer) as vp,
    hardware,
    attention,
    cast(null as varchar) as replay_of,
    cast(null as timestamp) as collected_at,
    0 as vstage,
    'rep' || replicate as request_id,
    prefix_tokens // tokens as chunk_idx,
    cast(round(time_ns) as bigint) as tau_ns,
    0 as rank,
    tokens,
    prefix_tokens,
    cast(null as bigint) as start_ns,
    cast(null as bigint) as end_ns,
    1 as tp_ranks,
    prefix_tokens = max(prefix_tokens) over curve as is_last_chunk,
    false as is_partial,
    operator
from points
window curve as (partition by run_id, operator, model, tp, hardware, tokens)
