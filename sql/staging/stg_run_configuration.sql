-- one row per stored run: the facts a configuration (a set of repeats pooled into one tau_k
-- curve, one trend, one schedule comparison) is made of, and a label a person can read.
-- A run without a model fact (untagged real data) is a configuration of its own: its `model`
-- is '(untagged) <run_id>', so runs of unknown workloads are never pooled with each other until
-- the user tags them alike (tracereplay ingest DIR --tag model=...). `configuration_label` is built from what
-- is known and is never null: with a model fact, model, schedule, seq_len/chunk_size (tokens as
-- people write them, 64K) and pp; without one, '(untagged)', the reader (ascend text / ascend db
-- / kineto / ...), the accelerator when the profile names it and the stem of the path read.
-- int_chunk_tau and the fit inputs (pipelines/store/queries.py fit_inputs) read this relation.
with facts as (
    select
        *,
        regexp_replace(
            regexp_extract(rtrim(coalesce(origin, run_id), '/\'), '[^/\\]*$'), '\..*$', ''
        ) as origin_stem,
        case
            when chunk_size % 1024 = 0 and chunk_size >= 1024
                then cast(chunk_size // 1024 as varchar) || 'K'
            else cast(chunk_size as varchar)
        end as chunk_tokens,
        case
            when seq_len % 1024 = 0 and seq_len >= 1024
                then cast(seq_len // 1024 as varchar) || 'K'
            else cast(seq_len as varchar)
        end as seq_tokens,
        case source
            when 'ascend_pt' then 'ascend text'
            when 'ascend_pt_db' then 'ascend db'
            when 'cluster' then 'msprof-analyze cluster'
            else source
        end as source_name
    from runs
)

select
    run_id,
    content_hash,
    segmentation,
    source,
    schedule,
    chunk_size,
    seq_len,
    tp,
    pp,
    vp,
    hardware,
    attention,
    replay_of,
    collected_at,
    model is null as is_untagged,
    coalesce(model, '(untagged) ' || run_id) as model,  -- noqa: RF04
    case
        when model is not null
            then concat_ws(
                ' ',
                model,  -- noqa: RF04
                schedule,
                case
                    when seq_len is not null or chunk_size is not null
                        then
                            coalesce(seq_tokens, '-') || '/' || coalesce(chunk_tokens, '-')
                end,
                'pp' || pp
            )
        else concat_ws(' ', '(untagged)', source_name, hardware, nullif(origin_stem, ''))
    end as configuration_label
from facts
